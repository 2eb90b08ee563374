"""``dkf``: LaiRA-style dynamic Kalman filter over drifting power-law parameters.

The power law ``ln L = ln a - b ln w`` is allowed to drift as training goes on: the state holds the
position, velocity and acceleration of ``theta = (-b, ln a)`` (6 numbers), moving by a
constant-acceleration model from one observation to the next, with process noise ``q`` per
derivative. Each observation ``ln L_i`` measures ``theta`` through ``H_i = [ln w_i, 0, 0, 1, 0, 0]``
with noise variance ``r``. The filtered ``theta`` is inverted at the target like ``wls``, with the
delta method on the filtered covariance. Tasks are filtered together, one batched step per
observation index, over the last ``window`` points.
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

_BLOCK = np.array([[1.0, 1.0, 0.5], [0.0, 1.0, 1.0], [0.0, 0.0, 1.0]])
TRANSITION = np.kron(np.eye(2), _BLOCK)  # [-b, d(-b), dd(-b), ln a, d ln a, dd ln a]


class DKFForecaster:
    """Batched dynamic Kalman filter (see the module docstring).

    Parameters
    ----------
    process_noise:
        Variances ``q`` added per observation step to position, velocity and acceleration.
    observation_noise:
        Variance ``r`` of a log-loss observation.
    prior_slope:
        Initial ``b``; the initial ``ln a`` makes the first point fit exactly.
    prior_variance:
        Initial variances of position, velocity and acceleration.
    window:
        Only the last ``window`` points are filtered.
    min_log_sd:
        Floor of the standard deviation of ``ln w*``.
    """

    name = "dkf"

    def __init__(
        self,
        process_noise: tuple[float, float, float] = (1e-4, 1e-5, 1e-6),
        observation_noise: float = 4e-4,
        prior_slope: float = 0.5,
        prior_variance: tuple[float, float, float] = (1.0, 0.01, 1e-4),
        window: int = 32,
        min_log_sd: float = 0.05,
    ) -> None:
        self.q = np.diag(np.tile(process_noise, 2))
        self.r = float(observation_noise)
        self.prior_slope = prior_slope
        self.p0 = np.diag(np.tile(prior_variance, 2))
        self.window, self.min_log_sd = window, min_log_sd

    def predict(self, histories: Sequence[History], targets: Sequence[float]) -> Forecast:
        targets = validate_targets(histories, targets)
        n, h = len(histories), self.window
        result = unknown(n)
        x = np.zeros((n, h))
        y = np.zeros((n, h))
        valid = np.zeros((n, h), dtype=bool)
        current, best = np.zeros(n), np.full(n, np.inf)
        for k, (work, loss) in enumerate(histories):
            work, loss = clean_history(work, loss)
            m = min(work.size, h)
            if m:
                x[k, h - m :], y[k, h - m :] = np.log(work[-m:]), np.log(loss[-m:])
                valid[k, h - m :] = True
                current[k], best[k] = work[-1], loss.min()
        state, cov = self._filter(x, y, valid)
        usable = (valid.sum(axis=1) >= 2) & np.isfinite(targets) & (targets > 0)
        slope = -state[:, 0]
        reached = usable & (best <= targets)
        rising = usable & ~reached & (slope <= 1e-6)
        fit = usable & ~reached & ~rising
        if fit.any():
            log_eps = np.log(targets[fit])
            c, b = state[fit, 3], slope[fit]
            log_total = (c - log_eps) / b
            # d ln w* / d(-b) and d ln w* / d(ln a), at positions 0 and 3 of the state
            grad = np.zeros((fit.sum(), 6))
            grad[:, 0], grad[:, 3] = (c - log_eps) / b**2, 1.0 / b
            var = np.einsum("ni,nij,nj->n", grad, cov[fit], grad)
            log_sd = np.maximum(np.sqrt(np.maximum(var, 0.0)), self.min_log_sd)
            result.remaining[fit] = lognormal_quantiles(log_total, log_sd, current[fit])
        result.remaining[reached] = 0.0
        result.remaining[rising] = MAX_REMAINING
        result.known[usable] = True
        return result

    def _filter(self, x: np.ndarray, y: np.ndarray, valid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Batched filter over the right-aligned points; a task's state starts at its first point."""
        n, h = x.shape
        first = np.argmax(valid, axis=1)
        state = np.zeros((n, 6))
        state[:, 0] = -self.prior_slope
        rows = np.arange(n)
        state[:, 3] = y[rows, first] + self.prior_slope * x[rows, first]  # first point fits exactly
        cov = np.broadcast_to(self.p0, (n, 6, 6)).copy()
        for i in range(h):
            step = valid[:, i] & (first < i)
            if not step.any():
                continue
            s = state[step] @ TRANSITION.T
            p = TRANSITION @ cov[step] @ TRANSITION.T + self.q
            obs = np.zeros((s.shape[0], 6))
            obs[:, 0], obs[:, 3] = x[step, i], 1.0
            innovation = y[step, i] - np.einsum("ni,ni->n", obs, s)
            ph = np.einsum("nij,nj->ni", p, obs)
            gain = ph / (np.einsum("ni,ni->n", obs, ph) + self.r)[:, None]
            state[step] = s + gain * innovation[:, None]
            cov[step] = p - np.einsum("ni,nj->nij", gain, ph)
        return state, cov
