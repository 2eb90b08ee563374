"""``EnvConfig``: every setting of the environment, validated once, and the one place defaults live.

The env (``raw_env(**kwargs)`` or ``raw_env(config=EnvConfig(...))``), the CLI, ``mara bench``, the
MARA trainer and its teacher all take their defaults from here. Numbers are bounded before anything
is allocated, so an absurd setting fails with one ``ValueError`` naming it.
"""

from __future__ import annotations

import dataclasses
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from mara_env.core.config import MAX_HORIZON, MAX_NODES, MAX_TASKS, SimConfig, is_int, require

MAX_HISTORY_WINDOW = 256
MAX_LOAD = 100.0
INVALID_ACTION_MODES = ("idle", "raise")
RENDER_MODES = ("ansi", "rgb_array", "human")
CURVE_SPLITS = ("train", "val", "test")


def is_real(value: object) -> bool:
    """A finite real number (Python or numpy), not a bool."""
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_)) and np.isfinite(value)


@dataclass(frozen=True)
class EnvConfig:
    """Settings of ``mara/ClusterScheduling-v0``; see the field docs for each one's meaning and bounds.

    Numpy scalars are accepted wherever a number is (and stored as Python numbers).
    """

    num_nodes: int = 8
    """Nodes (agents) ``M``, 1..1024."""
    max_tasks: int = 16
    """Task-table rows ``K_max``, 1..1024; the action space is ``Discrete(K_max + 1)``."""
    horizon: int = 300
    """Slots per episode, 1..100,000."""
    workload: str = "synthetic"
    """A registered workload name (``mara_env.workloads.WORKLOADS``)."""
    load: str | float = "train"
    """Offered load: a preset name (``train``, ``heavy``, ``extreme``) or a number in (0, 100]. Not used by traces."""
    shaping: bool = False
    """Add the potential-based progress term to the team reward."""
    forecaster: Any = "flow"
    """``"flow"`` (default), ``"none"`` (no forecast features), another name in
    ``mara_env.forecast.FORECASTERS`` or a forecaster object."""
    calibrate_forecasts: bool = False
    """Rescale every forecast within an episode by the work its finished tasks needed against their
    first forecasts (``mara_env.forecast.in_episode``); needs a forecaster other than ``"none"`` and
    ``"oracle"``."""
    max_cycles: int | None = None
    """Truncate after this many slots (``None``: the horizon)."""
    render_mode: str | None = None
    """``None``, ``"ansi"``, ``"rgb_array"`` or ``"human"`` (prints the ansi table)."""
    history_window: int = 8
    """``H``, (work, loss) points per row in the observation, 1..256."""
    switch_cost: float = 0.1
    """Fraction of a slot lost by a node that switches task, in [0, 1)."""
    node_speeds: Sequence[float] | None = None
    """Per-node relative speeds in (0, 1000] (``None``: all 1.0)."""
    curve_split: str = "train"
    """Split of the workload's curve bank tasks come from: ``train``, ``val`` or ``test``."""
    arrivals: Any = "poisson"
    """``"poisson"``, ``"bursty"``, a path to a ``.csv`` trace, or an arrival-process object."""
    faults: Any = None
    """``None``, ``{"mtbf": slots, "mttr": slots}`` or ``{"schedule": [(node, first, last), ...]}``."""
    invalid_action: str = "idle"
    """``"idle"`` (default): a masked or malformed action is played as idle and counted in ``infos``;
    ``"raise"``: it raises ``InvalidActionError`` and changes nothing."""

    def __post_init__(self) -> None:
        self.sim_config()  # nodes, rows, horizon, switch cost, speeds (the core's own checks)
        self._check_choices()
        self._check_numbers()

    def _check_choices(self) -> None:
        for flag in ("shaping", "calibrate_forecasts"):
            value = getattr(self, flag)
            require(isinstance(value, (bool, np.bool_)), flag, "True or False", value)
            object.__setattr__(self, flag, bool(value))
        # a forecaster that reads the truth (the oracle) is refused where it is built: needs_truth tells
        require(not (self.calibrate_forecasts and self.forecaster == "none"), "calibrate_forecasts",
                "False with forecaster='none' (no forecasts to calibrate)", self.calibrate_forecasts)  # fmt: skip
        require(
            self.invalid_action in INVALID_ACTION_MODES,
            "invalid_action",
            f"one of {INVALID_ACTION_MODES}",
            self.invalid_action,
        )
        require(self.render_mode is None or self.render_mode in RENDER_MODES, "render_mode",
                f"None or one of {RENDER_MODES}", self.render_mode)  # fmt: skip
        require(self.curve_split in CURVE_SPLITS, "curve_split", f"one of {CURVE_SPLITS}", self.curve_split)
        require(isinstance(self.workload, str), "workload", "a registered workload name", self.workload)

    def _check_numbers(self) -> None:
        window = self.history_window
        require(is_int(window) and 1 <= window <= MAX_HISTORY_WINDOW, "history_window",
                f"an integer in [1, {MAX_HISTORY_WINDOW}]", window)  # fmt: skip
        object.__setattr__(self, "history_window", int(window))
        cycles = self.max_cycles
        require(cycles is None or (is_int(cycles) and cycles >= 1), "max_cycles", "None or an integer >= 1", cycles)
        if cycles is not None:
            object.__setattr__(self, "max_cycles", int(cycles))
        if not isinstance(self.load, str):
            require(is_real(self.load) and 0 < self.load <= MAX_LOAD, "load",
                    f"a preset name or a number in (0, {MAX_LOAD:g}]", self.load)  # fmt: skip
            object.__setattr__(self, "load", float(self.load))
        for name in ("num_nodes", "max_tasks", "horizon"):
            object.__setattr__(self, name, int(getattr(self, name)))

    def sim_config(self) -> SimConfig:
        """The simulator's share of the settings."""
        return SimConfig(self.num_nodes, self.max_tasks, self.horizon, self.switch_cost, self.node_speeds)

    @property
    def cycles(self) -> int:
        """Slots before truncation: ``max_cycles``, or the horizon."""
        return self.horizon if self.max_cycles is None else self.max_cycles

    def replace(self, **changes: Any) -> EnvConfig:
        """A copy with ``changes`` applied (validated again)."""
        return dataclasses.replace(self, **changes)

    def kwargs(self) -> dict[str, Any]:
        """The settings as ``raw_env`` keyword arguments."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    @classmethod
    def from_kwargs(cls, kwargs: Mapping[str, Any]) -> EnvConfig:
        """An ``EnvConfig`` from keyword arguments; ``TypeError`` naming unknown keys and the allowed ones."""
        unknown = sorted(set(kwargs) - FIELD_NAMES)
        if unknown:
            raise TypeError(f"unknown env settings {unknown}; allowed: {sorted(FIELD_NAMES)}")
        return cls(**kwargs)


FIELD_NAMES = frozenset(f.name for f in dataclasses.fields(EnvConfig))
DEFAULTS = EnvConfig()
__all__ = ["DEFAULTS", "EnvConfig", "FIELD_NAMES", "MAX_HORIZON", "MAX_LOAD", "MAX_NODES", "MAX_TASKS"]
