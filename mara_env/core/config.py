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


# Bounds checked before anything is allocated (a typo such as num_nodes=10**6 must not eat the memory).
MAX_NODES = 1024
MAX_TASKS = 1024
MAX_HORIZON = 100_000
MAX_SPEED = 1000.0


@dataclass(frozen=True)
class SimConfig:
    """Static parameters of a cluster.

    Parameters
    ----------
    num_nodes:
        Number of compute nodes ``M`` (1..1024).
    max_tasks:
        Rows in the task table ``K_max`` (1..1024): at most this many tasks are schedulable at once;
        later arrivals wait in a FIFO admission queue (their deadline still runs).
    horizon:
        Slots in a run (1..100,000).
    switch_cost:
        Fraction of a slot lost by a node that trained a different task, or idled, in the previous
        slot (checkpoint/restore), in ``[0, 1)``; each task scales it by its ``switch_factor``.
    node_speeds:
        Relative speed of each node, in (0, 1000]; ``None`` means all 1.0.
    """

    num_nodes: int = 8
    max_tasks: int = 16
    horizon: int = 300
    switch_cost: float = 0.1
    node_speeds: Sequence[float] | None = None

    def __post_init__(self) -> None:
        for name, most in (("num_nodes", MAX_NODES), ("max_tasks", MAX_TASKS), ("horizon", MAX_HORIZON)):
            value = getattr(self, name)
            require(is_int(value) and 1 <= value <= most, name, f"an integer in [1, {most:,}]", value)
        cost = self.switch_cost
        require(
            isinstance(cost, (int, float, np.floating, np.integer)) and not isinstance(cost, bool) and 0 <= cost < 1,
            "switch_cost",
            "a number in [0, 1)",
            self.switch_cost,
        )
        if self.node_speeds is not None:
            try:
                speeds = np.asarray(self.node_speeds, dtype=np.float64)
            except (TypeError, ValueError):
                speeds = np.array([np.nan])
            require(
                speeds.shape == (self.num_nodes,),
                "node_speeds",
                f"a sequence of num_nodes={self.num_nodes} numbers",
                self.node_speeds,
            )
            require(
                bool(np.all(np.isfinite(speeds)) and np.all(speeds > 0) and np.all(speeds <= MAX_SPEED)),
                "node_speeds",
                f"numbers in (0, {MAX_SPEED:g}]",
                self.node_speeds,
            )

    def speeds(self) -> np.ndarray:
        """Node speeds as a float64 array of length ``num_nodes``."""
        if self.node_speeds is None:
            return np.ones(self.num_nodes)
        return np.asarray(self.node_speeds, dtype=np.float64).copy()
