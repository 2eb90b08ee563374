"""Conformal calibration of the flow forecaster's quantiles on held-out (``val``) curves.

The flow's sampled remaining work can be biased and its spread too narrow on curves unlike its
training data. After training, the forecaster is run on ``val`` cases of its training banks (the
cases of :func:`mara_env.forecast.evaluation.make_cases`) and two numbers are fitted in log space:

- ``shift``: the median of ``ln(truth / p50)``, added to every sample's log (removes the median bias;
  fitted, but not used by default: see :func:`fit_calibration`);
- ``widen``: the 80th percentile of each case's "needed" widening (how far the log interval around
  the shifted median must stretch, on the side the truth falls, to contain it), so that exactly 80% of
  the calibration cases fall inside the stretched p10-p90 (split-conformal, with a scale score).

A sample ``s`` of a task with median ``m`` becomes ``m * exp(shift) * (s / m) ** widen``; a monotone
map, so the quantiles move the same way.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mara_env.forecast.base import MAX_REMAINING

PREFIXES = (0.1, 0.25, 0.5)
WIDEN_RANGE = (0.25, 6.0)
IDENTITY = {"shift": 0.0, "widen": 1.0}


def apply_calibration(samples: np.ndarray, calibration: dict | None) -> np.ndarray:
    """Calibrated copy of ``(n, S)`` positive remaining-work samples."""
    if not calibration:
        return samples
    logs = np.log(np.maximum(samples, 1e-6))
    centre = np.median(logs, axis=1, keepdims=True)
    moved = centre + calibration["shift"] + calibration["widen"] * (logs - centre)
    return np.clip(np.exp(moved), 0.0, MAX_REMAINING)


def fit_from_quantiles(quantiles: np.ndarray, truth: np.ndarray, use_shift: bool = True) -> dict:
    """``shift`` and ``widen`` from uncalibrated ``(n, 3)`` quantiles and the true remaining work
    (``shift`` fixed at 0 unless ``use_shift``)."""
    logs = np.log(np.maximum(quantiles, 1e-6))
    error = np.log(np.maximum(truth, 1e-6)) - logs[:, 1]
    shift = float(np.median(error)) if use_shift else 0.0
    centred = error - shift
    below = np.maximum(logs[:, 1] - logs[:, 0], 1e-3)
    above = np.maximum(logs[:, 2] - logs[:, 1], 1e-3)
    need = np.where(centred >= 0, centred / above, -centred / below)
    widen = float(np.clip(np.quantile(need, 0.8), *WIDEN_RANGE))
    return {"shift": round(shift, 4), "widen": round(widen, 4), "cases": int(truth.size)}


def fit_calibration(net, banks: Sequence[str], tasks: int = 200, seed: int = 0) -> dict:
    """Fit the calibration of ``net`` on ``tasks`` val cases per bank and prefix.

    The one used is widening only (``shift = 0``): a median correction learned on the training
    families need not hold on a new family, and on the development families it was mixed
    (docs/forecasters.md); the fit with a shift is kept under ``"with_shift"`` for the record."""
    from mara_env.forecast.evaluation import make_cases
    from mara_env.forecast.flow import FlowForecaster

    forecaster = FlowForecaster.from_net(net, seed=seed, calibration=None)
    quantiles, truth = [], []
    for bank in banks:
        for prefix in PREFIXES:
            histories, targets, true_remaining = make_cases(bank, prefix, tasks, seed + 17, split="val")
            quantiles.append(forecaster.predict(histories, targets).remaining)
            truth.append(true_remaining)
    quantiles, truth = np.concatenate(quantiles), np.concatenate(truth)
    return {**fit_from_quantiles(quantiles, truth, use_shift=False), "with_shift": fit_from_quantiles(quantiles, truth)}
