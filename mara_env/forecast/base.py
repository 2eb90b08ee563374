"""The forecaster protocol: from loss histories to the distribution of remaining work.

Every forecaster answers the same question for a batch of tasks: given the ``(work, loss)`` points
observed so far and the target loss, how much more work until the best loss reaches the target?
Answers are quantiles ``p10, p50, p90`` of that remaining work (and samples where the method draws
them). Bad histories (NaN, inf, non-positive losses, fewer than two usable points, non-increasing
work) get a defined "unknown" answer, never an exception and never a NaN.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

# Remaining work is capped here (node-slots): "not within reach" and "unknown" read as this much.
MAX_REMAINING = 1000.0
QUANTILES = (0.1, 0.5, 0.9)
Z90 = 1.2815515655446004  # standard normal quantile at 0.9

History = tuple[np.ndarray, np.ndarray]


@dataclass(frozen=True)
class Forecast:
    """Remaining work to reach the target, per task.

    Attributes
    ----------
    remaining:
        ``(n, 3)`` quantiles p10, p50, p90, in ``[0, MAX_REMAINING]``.
    known:
        ``(n,)`` bool: False where the history was unusable (the answer is then the widest interval).
    samples:
        ``(n, S)`` sampled remaining work where the method samples, else ``None``.
    """

    remaining: np.ndarray
    known: np.ndarray
    samples: np.ndarray | None = None

    def __len__(self) -> int:
        return self.remaining.shape[0]


class Forecaster(Protocol):
    """Anything that forecasts remaining work; register it in ``mara_env.forecast.FORECASTERS``."""

    name: str

    def predict(self, histories: Sequence[History], targets: Sequence[float]) -> Forecast: ...


@runtime_checkable
class ReseedableForecaster(Protocol):
    """A forecaster that draws noise (``flow`` samples trajectories) and can restart it: the env calls
    ``reseed`` at every reset with a seed drawn from the episode's, so an episode's forecasts depend on
    its seed alone, not on the episodes an env object played before it. A forecaster without noise
    needs no ``reseed``."""

    def reseed(self, seed: int) -> None: ...


def clean_history(work: np.ndarray, loss: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The usable points of a history: finite, positive work and loss, strictly increasing work."""
    work = np.asarray(work, dtype=np.float64).ravel()
    loss = np.asarray(loss, dtype=np.float64).ravel()
    n = min(work.size, loss.size)
    work, loss = work[:n], loss[:n]
    ok = np.isfinite(work) & np.isfinite(loss) & (work > 0) & (loss > 0)
    work, loss = work[ok], loss[ok]
    if work.size > 1:
        keep = np.concatenate(([True], work[1:] > np.maximum.accumulate(work)[:-1]))
        work, loss = work[keep], loss[keep]
    return work, loss


def unknown(n: int) -> Forecast:
    """The widest answer for ``n`` tasks."""
    remaining = np.tile([0.0, MAX_REMAINING, MAX_REMAINING], (n, 1))
    return Forecast(remaining, np.zeros(n, dtype=bool))


def lognormal_quantiles(log_median: np.ndarray, log_sd: np.ndarray, current: np.ndarray) -> np.ndarray:
    """p10/p50/p90 of remaining work when the total work to target is log-normal; clipped and NaN-free."""
    total = np.exp(np.clip(log_median[:, None] + np.outer(log_sd, [-Z90, 0.0, Z90]), -50.0, 50.0))
    remaining = np.clip(total - current[:, None], 0.0, MAX_REMAINING)
    return np.nan_to_num(remaining, nan=MAX_REMAINING, posinf=MAX_REMAINING)


def validate_targets(histories: Sequence[History], targets: Sequence[float]) -> np.ndarray:
    targets = np.asarray(targets, dtype=np.float64).ravel()
    if targets.size != len(histories):
        raise ValueError(f"got {len(histories)} histories but {targets.size} targets")
    return targets
