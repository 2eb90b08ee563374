"""``oracle``: the true remaining work (for upper bounds and ablations only; no scheduler sees it)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mara_env.forecast.base import MAX_REMAINING, Forecast, History, validate_targets


class OracleForecaster:
    """Answers with the truth the environment passes in; certain, so p10 = p50 = p90."""

    name = "oracle"
    needs_truth = True

    def predict(
        self, histories: Sequence[History], targets: Sequence[float], truth: Sequence[float] | None = None
    ) -> Forecast:
        validate_targets(histories, targets)
        if truth is None:
            raise ValueError("the oracle forecaster needs truth= (the true remaining work of each task)")
        truth = np.asarray(truth, dtype=np.float64).ravel()
        if truth.size != len(histories):
            raise ValueError(f"got {len(histories)} histories but {truth.size} truths")
        remaining = np.clip(np.nan_to_num(truth, nan=MAX_REMAINING, posinf=MAX_REMAINING), 0.0, MAX_REMAINING)
        return Forecast(np.repeat(remaining[:, None], 3, axis=1), np.ones(truth.size, dtype=bool))
