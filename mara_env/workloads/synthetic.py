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

from mara_env.workloads.base import TaskDraw, TaskScale, log_uniform

GRID_POINTS = 400


def _pow3(rng, x, n):
    tau, alpha = log_uniform(rng, 0.01, 0.3, n), rng.uniform(0.5, 2.0, n)
    return (1.0 + x / tau[:, None]) ** -alpha[:, None]


def _pow4(rng, x, n):
    tau, alpha, beta = log_uniform(rng, 0.02, 0.4, n), rng.uniform(0.3, 1.5, n), rng.uniform(1.0, 2.0, n)
    return (1.0 + (x / tau[:, None]) ** beta[:, None]) ** -alpha[:, None]


def _exp3(rng, x, n):
    tau = log_uniform(rng, 0.05, 0.5, n)
    return np.exp(-x / tau[:, None])


def _janoschek(rng, x, n):
    kappa, delta = log_uniform(rng, 1.0, 20.0, n), rng.uniform(0.4, 1.0, n)
    return np.exp(-kappa[:, None] * x ** delta[:, None])


def _weibull(rng, x, n):
    # delta > 1: a slow start (warm-up plateau) before the loss falls.
    tau, delta = log_uniform(rng, 0.1, 0.5, n), rng.uniform(1.2, 2.5, n)
    return np.exp(-((x / tau[:, None]) ** delta[:, None]))


def _mmf(rng, x, n):
    tau, delta = log_uniform(rng, 0.02, 0.3, n), rng.uniform(0.7, 2.5, n)
    return 1.0 / (1.0 + (x / tau[:, None]) ** delta[:, None])


def _ilog2(rng, x, n):
    tau = log_uniform(rng, 0.001, 0.05, n)
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
    sigma = log_uniform(rng, 0.003, 0.03, n)
    phi = rng.uniform(0.0, 0.9, n)
    shocks = rng.standard_normal((n, points)) * (sigma * np.sqrt(1.0 - phi**2))[:, None]
    noise = np.empty((n, points))
    noise[:, 0] = rng.standard_normal(n) * sigma
    for i in range(1, points):
        noise[:, i] = phi * noise[:, i - 1] + shocks[:, i]
    return noise


def sample_curves(rng: np.random.Generator, count: int) -> tuple[np.ndarray, list[str]]:
    """``count`` noisy loss curves on ``GRID_POINTS`` evenly spaced points, and their family names."""
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
    return losses, [names[f] for f in family]


class SyntheticWorkload:
    """Fresh parametric curves for every task (so no episode ever repeats a curve).

    Parameters
    ----------
    scale:
        Where targets sit and how big and parallel tasks are (:class:`TaskScale`).
    """

    name = "synthetic"

    def __init__(self, scale: TaskScale | None = None) -> None:
        self.scale = scale or TaskScale()

    def sample_tasks(self, rng: np.random.Generator, count: int) -> list[TaskDraw]:
        """Draw ``count`` task bodies."""
        if count == 0:
            return []
        losses, families = sample_curves(rng, count)
        return self.scale.draw(rng, list(losses), families)
