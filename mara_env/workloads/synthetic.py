"""The ``synthetic`` workload: loss curves from parametric learning-curve families.

The families are the classic learning-curve models (pow3, pow4, exp3, Janoschek, MMF, Weibull,
ilog2) rewritten as decreasing losses ``L(x) = c + (L0 - c) * g(x)`` with ``g(0) = 1`` over a
normalised training time ``x`` in ``[0, 1]``. Noise is multiplicative and autocorrelated (AR(1) in
log-loss), as minibatch noise looks in recorded training curves. The parameter ranges are our own
choice, picked so that the families cover fast, slow, S-shaped and long-tailed decays.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from mara_env.core import LossCurve
from mara_env.workloads.base import TaskDraw

GRID_POINTS = 400


def _log_uniform(rng: np.random.Generator, low: float, high: float, size: int) -> np.ndarray:
    return np.exp(rng.uniform(np.log(low), np.log(high), size))


def _pow3(rng, x, n):
    tau, alpha = _log_uniform(rng, 0.01, 0.3, n), rng.uniform(0.5, 2.0, n)
    return (1.0 + x / tau[:, None]) ** -alpha[:, None]


def _pow4(rng, x, n):
    tau, alpha, beta = _log_uniform(rng, 0.02, 0.4, n), rng.uniform(0.3, 1.5, n), rng.uniform(1.0, 2.0, n)
    return (1.0 + (x / tau[:, None]) ** beta[:, None]) ** -alpha[:, None]


def _exp3(rng, x, n):
    tau = _log_uniform(rng, 0.05, 0.5, n)
    return np.exp(-x / tau[:, None])


def _janoschek(rng, x, n):
    kappa, delta = _log_uniform(rng, 1.0, 20.0, n), rng.uniform(0.4, 1.0, n)
    return np.exp(-kappa[:, None] * x ** delta[:, None])


def _weibull(rng, x, n):
    # delta > 1: a slow start (warm-up plateau) before the loss falls.
    tau, delta = _log_uniform(rng, 0.1, 0.5, n), rng.uniform(1.2, 2.5, n)
    return np.exp(-((x / tau[:, None]) ** delta[:, None]))


def _mmf(rng, x, n):
    tau, delta = _log_uniform(rng, 0.02, 0.3, n), rng.uniform(0.7, 2.5, n)
    return 1.0 / (1.0 + (x / tau[:, None]) ** delta[:, None])


def _ilog2(rng, x, n):
    tau = _log_uniform(rng, 0.001, 0.05, n)
    return 1.0 / np.log2(2.0 + x / tau[:, None])


FAMILIES: dict[str, Callable[[np.random.Generator, np.ndarray, int], np.ndarray]] = {
    "pow3": _pow3,
    "pow4": _pow4,
    "exp3": _exp3,
    "janoschek": _janoschek,
    "mmf": _mmf,
    "weibull": _weibull,
    "ilog2": _ilog2,
}


def _ar1_log_noise(rng: np.random.Generator, n: int, points: int) -> np.ndarray:
    """AR(1) noise in log-loss, stationary with a per-curve scale and correlation."""
    sigma = _log_uniform(rng, 0.003, 0.03, n)
    phi = rng.uniform(0.0, 0.9, n)
    shocks = rng.standard_normal((n, points)) * (sigma * np.sqrt(1.0 - phi**2))[:, None]
    noise = np.empty((n, points))
    noise[:, 0] = rng.standard_normal(n) * sigma
    for i in range(1, points):
        noise[:, i] = phi * noise[:, i - 1] + shocks[:, i]
    return noise


class SyntheticWorkload:
    """Parametric curves; the target sits where a drawn share of the reducible loss is gone.

    Parameters
    ----------
    work_range:
        ``(low, high)`` of the log-uniform draw of the work (node-slots at speed 1) at which the
        target sits on the curve.
    scaling_range:
        Uniform range of the per-task data-parallel scaling exponent ``alpha``.
    """

    name = "synthetic"

    def __init__(
        self, work_range: tuple[float, float] = (4.0, 96.0), scaling_range: tuple[float, float] = (0.6, 0.95)
    ) -> None:
        self.work_range = work_range
        self.scaling_range = scaling_range

    def sample_tasks(self, rng: np.random.Generator, count: int) -> list[TaskDraw]:
        """Draw ``count`` tasks: a curve, its target and a scaling exponent each."""
        if count == 0:
            return []
        x = np.linspace(0.0, 1.0, GRID_POINTS)
        names = list(FAMILIES)
        family = rng.integers(len(names), size=count)
        shape = np.empty((count, GRID_POINTS))
        for f, name in enumerate(names):
            pick = np.flatnonzero(family == f)
            if pick.size:
                shape[pick] = FAMILIES[name](rng, x, pick.size)
        start = rng.uniform(1.0, 3.0, count)
        floor = start * rng.uniform(0.02, 0.4, count)
        clean = floor[:, None] + (start - floor)[:, None] * shape
        losses = clean * np.exp(_ar1_log_noise(rng, count, GRID_POINTS))
        reduced = rng.uniform(0.5, 0.95, count)  # share of the reducible loss gone at the target
        work_at_target = _log_uniform(rng, *self.work_range, count)
        alpha = rng.uniform(*self.scaling_range, count)
        draws = []
        for k in range(count):
            target_index = _target_index(shape[k], reduced[k])
            best = np.minimum.accumulate(losses[k])
            curve = LossCurve(losses[k], work_step=work_at_target[k] / target_index)
            draws.append(TaskDraw(curve, float(best[target_index]), float(alpha[k]), names[family[k]]))
        return draws


def _target_index(shape: np.ndarray, reduced: float) -> int:
    """First grid index where ``reduced`` of the reducible loss is gone, kept inside 10%-80% of the grid."""
    hits = np.flatnonzero(shape <= 1.0 - reduced)
    index = int(hits[0]) if hits.size else GRID_POINTS
    return int(np.clip(index, GRID_POINTS // 10, (GRID_POINTS * 4) // 5))
