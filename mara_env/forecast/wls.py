"""``wls``: LARA-style power-law fit by discounted, ridge-regularised weighted least squares.

The loss is modelled as ``L(w) = a * w ** -b``, i.e. ``ln L = c - b ln w`` with ``c = ln a``. Point
``i`` of ``n`` gets weight ``discount ** (n - 1 - i)`` (recent points count more, as LARA's online
estimator discounts old ones), and a ridge term ``ridge * sum(weights) * (b - prior_slope) ** 2``
keeps the slope sane on short or flat prefixes. The fit is inverted at the target,
``w* = exp((c - ln eps) / b)``, and its uncertainty carried to ``ln w*`` by the delta method from the
parameters' covariance (residual variance times the inverse normal matrix), giving log-normal
quantiles of the remaining work ``w* - w_now``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mara_env.forecast.base import (
    MAX_REMAINING,
    Forecast,
    History,
    clean_history,
    lognormal_quantiles,
    unknown,
    validate_targets,
)


class WLSForecaster:
    """Discounted ridge WLS power law (see the module docstring).

    Parameters
    ----------
    discount:
        Weight ratio between consecutive points, in ``(0, 1]``.
    ridge:
        Strength of the pull of the slope towards ``prior_slope``, relative to the total weight.
    prior_slope:
        The slope ``b`` assumed when there is little evidence.
    max_points:
        Only the last ``max_points`` points are used.
    min_log_sd:
        Floor of the standard deviation of ``ln w*`` (no forecast is certain).
    """

    name = "wls"

    def __init__(
        self,
        discount: float = 0.95,
        ridge: float = 0.05,
        prior_slope: float = 0.5,
        max_points: int = 64,
        min_log_sd: float = 0.05,
    ) -> None:
        if not 0.0 < discount <= 1.0:
            raise ValueError(f"discount must be in (0, 1], got {discount}")
        if ridge < 0:
            raise ValueError(f"ridge must be >= 0, got {ridge}")
        self.discount, self.ridge, self.prior_slope = discount, ridge, prior_slope
        self.max_points, self.min_log_sd = max_points, min_log_sd

    def fit(self, work: np.ndarray, loss: np.ndarray) -> tuple[float, float, np.ndarray] | None:
        """``(c, b, covariance of (c, b))`` of the fit, or ``None`` with fewer than two usable points."""
        work, loss = clean_history(work, loss)
        work, loss = work[-self.max_points :], loss[-self.max_points :]
        if work.size < 2:
            return None
        x, y = np.log(work), np.log(loss)
        weights = self.discount ** np.arange(x.size - 1, -1, -1.0)
        design = np.column_stack([np.ones_like(x), -x])  # y = c - b x
        penalty = self.ridge * weights.sum() * np.diag([0.0, 1.0])
        normal = design.T @ (weights[:, None] * design) + penalty
        rhs = design.T @ (weights * y) + penalty @ np.array([0.0, self.prior_slope])
        c, b = np.linalg.solve(normal, rhs)
        residual = y - design @ np.array([c, b])
        dof = max(weights.sum() - 2.0, 1.0)
        variance = max(float(weights @ residual**2) / dof, 1e-6)
        return float(c), float(b), variance * np.linalg.inv(normal)

    def predict(self, histories: Sequence[History], targets: Sequence[float]) -> Forecast:
        targets = validate_targets(histories, targets)
        result = unknown(len(histories))
        for k, (work, loss) in enumerate(histories):
            answer = self._one(work, loss, targets[k])
            if answer is not None:
                result.remaining[k] = answer
                result.known[k] = True
        return result

    def _one(self, work: np.ndarray, loss: np.ndarray, target: float) -> np.ndarray | None:
        if not (np.isfinite(target) and target > 0):
            return None
        clean_work, clean_loss = clean_history(work, loss)
        if clean_work.size and clean_loss.min() <= target:
            return np.zeros(3)  # already there
        fit = self.fit(work, loss)
        if fit is None:
            return None
        c, b, cov = fit
        if b <= 1e-6:
            return np.array([MAX_REMAINING] * 3)  # flat or rising: not within reach
        log_total = (c - np.log(target)) / b
        grad = np.array([1.0 / b, -(c - np.log(target)) / b**2])
        log_sd = max(float(np.sqrt(max(grad @ cov @ grad, 0.0))), self.min_log_sd)
        return lognormal_quantiles(np.array([log_total]), np.array([log_sd]), clean_work[-1:])[0]
