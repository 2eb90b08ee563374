"""A task's hidden loss curve, recorded on a uniform grid of work.

Every workload (parametric or recorded from real training) hands the simulator the same thing: the
noisy loss a task would report after ``i * work_step`` units of work, for ``i = 0 .. n-1``. The
simulator reads it as a step function (the value of the last grid point reached), so that the work
needed to reach a target is exact and known to the simulator (and to oracles), never to schedulers.
"""

from __future__ import annotations

import numpy as np

# Guards ``floor(work / step)`` against float round-off when work lands exactly on a grid point.
_GRID_EPS = 1e-9


class LossCurve:
    """Noisy loss recorded at work ``0, step, 2*step, ...``.

    Parameters
    ----------
    losses:
        Positive, finite losses, one per grid point (at least two).
    work_step:
        Units of work between two grid points (> 0). Work beyond the last point reads the last value.
    """

    __slots__ = ("losses", "work_step", "_best")

    def __init__(self, losses: np.ndarray, work_step: float) -> None:
        losses = np.asarray(losses, dtype=np.float64)
        if losses.ndim != 1 or losses.size < 2:
            raise ValueError(f"losses must be a 1-D array of at least 2 points, got shape {losses.shape}")
        if not np.all(np.isfinite(losses)) or np.any(losses <= 0):
            raise ValueError("losses must be finite and > 0")
        if not (np.isfinite(work_step) and work_step > 0):
            raise ValueError(f"work_step must be finite and > 0, got {work_step}")
        self.losses = losses
        self.work_step = float(work_step)
        # Best loss reached so far: the completion test reads this (a run keeps its best checkpoint).
        self._best = np.minimum.accumulate(losses)

    def __len__(self) -> int:
        return self.losses.size

    @property
    def max_work(self) -> float:
        """Work at the last grid point."""
        return (self.losses.size - 1) * self.work_step

    def index(self, work: float) -> int:
        """Grid index reached after ``work`` units of work (clamped to the grid)."""
        i = int(work / self.work_step + _GRID_EPS)
        return min(max(i, 0), self.losses.size - 1)

    def loss_at(self, work: float) -> float:
        """The loss a task reports after ``work`` units of work."""
        return float(self.losses[self.index(work)])

    def best_at(self, work: float) -> float:
        """The lowest loss reported at any work up to ``work``."""
        return float(self._best[self.index(work)])

    def work_to_reach(self, target: float) -> float:
        """Least work after which the best loss is at or below ``target`` (``inf`` if never)."""
        hits = np.flatnonzero(self._best <= target)
        return float(hits[0] * self.work_step) if hits.size else float("inf")
