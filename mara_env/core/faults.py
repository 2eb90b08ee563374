"""Node faults: which nodes are up in each slot.

Faults happen at slot boundaries: a node that is down for a slot trains nothing in it (its mask
allows only idle), and a task keeps all the work credited up to the last finished slot (training
checkpoints every slot). A node that comes back pays the switch cost when it next trains, like any
node restoring a checkpoint.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

from mara_env.core.config import is_int


class FaultModel:
    """Per-node up/down timelines over an episode.

    Parameters
    ----------
    mtbf:
        Mean slots between failures of one node (exponential up times), > 0.
    mttr:
        Mean slots to repair (exponential down times, at least one slot), > 0.
    schedule:
        Instead of ``mtbf``/``mttr``: explicit outages, each ``(node, first_slot, last_slot)``
        (inclusive).
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
                ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
                if not (ok and value > 0):
                    raise ValueError(f"faults['{name}'] must be a finite number of slots > 0, got {value!r}")
        self.mtbf, self.mttr = mtbf, mttr
        self.schedule = [tuple(item) for item in schedule] if schedule is not None else None
        for item in self.schedule or []:
            if len(item) != 3 or not all(is_int(v) for v in item) or item[1] > item[2] or min(item) < 0:
                raise ValueError(f"each fault must be (node, first_slot, last_slot) integers, got {item!r}")

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
                up[first : last + 1, node] = False
            return up
        for node in range(num_nodes):
            t = 0
            while t < horizon:
                t += int(rng.exponential(self.mtbf))  # up time
                down = max(1, int(math.ceil(rng.exponential(self.mttr))))
                up[t : t + down, node] = False
                t += down
        return up
