"""Validated configuration of the cluster simulator."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


def require(condition: bool, field: str, allowed: str, got: object) -> None:
    """Raise ``ValueError`` naming ``field``, what is allowed and what was given."""
    if not condition:
        raise ValueError(f"{field} must be {allowed}, got {got!r}")


def is_int(value: object) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


@dataclass(frozen=True)
class SimConfig:
    """Static parameters of a cluster.

    Parameters
    ----------
    num_nodes:
        Number of compute nodes ``M`` (>= 1).
    max_tasks:
        Rows in the task table ``K_max`` (>= 1): at most this many tasks are schedulable at once;
        later arrivals wait in a FIFO admission queue (their deadline still runs).
    horizon:
        Slots in a run (>= 1).
    switch_cost:
        Fraction of a slot lost by a node that trained a different task, or idled, in the previous
        slot (checkpoint/restore), in ``[0, 1)``; each task scales it by its ``switch_factor``.
    node_speeds:
        Relative speed of each node (> 0); ``None`` means all 1.0.
    """

    num_nodes: int = 8
    max_tasks: int = 16
    horizon: int = 300
    switch_cost: float = 0.1
    node_speeds: Sequence[float] | None = None

    def __post_init__(self) -> None:
        require(is_int(self.num_nodes) and self.num_nodes >= 1, "num_nodes", "an integer >= 1", self.num_nodes)
        require(is_int(self.max_tasks) and self.max_tasks >= 1, "max_tasks", "an integer >= 1", self.max_tasks)
        require(is_int(self.horizon) and self.horizon >= 1, "horizon", "an integer >= 1", self.horizon)
        require(
            isinstance(self.switch_cost, (int, float)) and 0.0 <= self.switch_cost < 1.0,
            "switch_cost",
            "a number in [0, 1)",
            self.switch_cost,
        )
        if self.node_speeds is not None:
            speeds = np.asarray(self.node_speeds, dtype=np.float64)
            require(
                speeds.shape == (self.num_nodes,),
                "node_speeds",
                f"a sequence of num_nodes={self.num_nodes} numbers",
                self.node_speeds,
            )
            require(
                bool(np.all(np.isfinite(speeds)) and np.all(speeds > 0)),
                "node_speeds",
                "finite and > 0",
                self.node_speeds,
            )

    def speeds(self) -> np.ndarray:
        """Node speeds as a float64 array of length ``num_nodes``."""
        if self.node_speeds is None:
            return np.ones(self.num_nodes)
        return np.asarray(self.node_speeds, dtype=np.float64).copy()
