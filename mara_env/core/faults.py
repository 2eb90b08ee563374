"""Node faults: which nodes are up in each slot.

Faults happen at slot boundaries: a node that is down for a slot trains nothing in it (its mask
allows only idle), and a task keeps all the work credited up to the last finished slot (training
checkpoints every slot). A node that comes back pays the switch cost when it next trains, like any
node restoring a checkpoint.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from numbers import Real

import numpy as np

from mara_env.core.config import is_int

# Means above this many slots are refused: far beyond any horizon, and draws stay exact integers.
MAX_MEAN_SLOTS = 1e12


class FaultModel:
    """Per-node up/down timelines over an episode.

    Parameters
    ----------
    mtbf:
        Mean slots between failures of one node (exponential up times), in ``(0, MAX_MEAN_SLOTS]``.
    mttr:
        Mean slots to repair (exponential down times, at least one slot), in ``(0, MAX_MEAN_SLOTS]``.
    schedule:
        Instead of ``mtbf``/``mttr``: explicit outages, each ``(node, first_slot, last_slot)``
        (inclusive) of non-negative integers with ``first_slot <= last_slot``; slots past the
        horizon are ignored.
    """

    def __init__(
        self,
        mtbf: float | None = None,
        mttr: float | None = None,
        schedule: Sequence[Sequence[int]] | None = None,
    ) -> None:
        random_given = mtbf is not None or mttr is not None
        if random_given == (schedule is not None):
            raise ValueError("faults must give either mtbf and mttr, or a schedule of (node, first, last)")
        if random_given:
            for name, value in (("mtbf", mtbf), ("mttr", mttr)):
                check_mean(name, value)
        self.mtbf, self.mttr = mtbf, mttr
        if schedule is not None and (isinstance(schedule, (str, bytes)) or not isinstance(schedule, Sequence)):
            raise ValueError(f"faults['schedule'] must be a list of (node, first_slot, last_slot), got {schedule!r}")
        self.schedule = [check_outage(item) for item in schedule] if schedule is not None else None

    @classmethod
    def from_config(cls, faults: FaultModel | Mapping | None) -> FaultModel | None:
        """``None``, a model, or a dict ``{"mtbf", "mttr"}`` / ``{"schedule"}``."""
        if faults is None or isinstance(faults, FaultModel):
            return faults
        if not isinstance(faults, Mapping):
            raise ValueError(f"faults must be None, a FaultModel or a dict, got {faults!r}")
        unknown = set(faults) - {"mtbf", "mttr", "schedule"}
        if unknown:
            raise ValueError(f"faults has unknown keys {sorted(unknown)}; allowed: mtbf, mttr, schedule")
        return cls(faults.get("mtbf"), faults.get("mttr"), faults.get("schedule"))

    def timeline(self, rng: np.random.Generator, num_nodes: int, horizon: int) -> np.ndarray:
        """``(horizon, num_nodes)`` bool: True where the node is up in that slot."""
        up = np.ones((horizon, num_nodes), dtype=bool)
        if self.schedule is not None:
            for node, first, last in self.schedule:
                if node >= num_nodes:
                    raise ValueError(f"fault schedule names node {node}, but there are {num_nodes} nodes")
                if first < horizon:
                    up[first : min(last, horizon - 1) + 1, node] = False
            return up
        for node in range(num_nodes):
            t = 0
            while t < horizon:
                t += int(rng.exponential(self.mtbf))  # up time
                down = max(1, int(math.ceil(rng.exponential(self.mttr))))
                up[t : t + down, node] = False
                t += down
        return up


def check_mean(name: str, value: object) -> None:
    """``ValueError`` unless ``value`` is a real number of slots in ``(0, MAX_MEAN_SLOTS]``."""
    ok = isinstance(value, Real) and not isinstance(value, bool) and math.isfinite(value)
    if not (ok and 0 < value <= MAX_MEAN_SLOTS):
        raise ValueError(f"faults['{name}'] must be a number of slots in (0, {MAX_MEAN_SLOTS:g}], got {value!r}")


def check_outage(item: object) -> tuple[int, int, int]:
    """One scheduled outage as ``(node, first_slot, last_slot)``; ``ValueError`` saying what is wrong."""
    shape = "each fault must be (node, first_slot, last_slot)"
    try:
        values = tuple(item)
    except TypeError:
        raise ValueError(f"{shape}, got {item!r}") from None
    if len(values) != 3 or not all(is_int(v) for v in values):
        raise ValueError(f"{shape} integers, got {item!r}")
    node, first, last = (int(v) for v in values)
    if min(node, first, last) < 0:
        raise ValueError(f"{shape} with no negative value, got {item!r}")
    if last < first:
        raise ValueError(f"fault {item!r}: the last slot ({last}) is before the first ({first})")
    return node, first, last
