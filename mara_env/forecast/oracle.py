"""``oracle``: the true remaining work (for the clairvoyant heuristic and ablations; no scheduler sees it).

Its answers are not capped at :data:`~mara_env.forecast.base.MAX_REMAINING` like a forecaster's: any
remaining work up to :data:`ORACLE_MAX` node-slots (the largest an observation can carry, far beyond
any preset's capacity of nodes x horizon) is passed as it is; a task that can never reach its target
reads ``ORACLE_MAX``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mara_env.forecast.base import Forecast, History, validate_targets
from mara_env.observation import BOUND, WORK_SCALE

ORACLE_MAX = BOUND * WORK_SCALE


class OracleForecaster:
    """Answers with the truth the environment passes in; certain, so p10 = p50 = p90."""

    name = "oracle"
    needs_truth = True
    # Answers at or above this are "cannot finish" (ForecastFeatures reads it; forecasters use MAX_REMAINING).
    max_remaining = ORACLE_MAX

    def predict(
        self, histories: Sequence[History], targets: Sequence[float], truth: Sequence[float] | None = None
    ) -> Forecast:
        validate_targets(histories, targets)
        if truth is None:
            raise ValueError("the oracle forecaster needs truth= (the true remaining work of each task)")
        truth = np.asarray(truth, dtype=np.float64).ravel()
        if truth.size != len(histories):
            raise ValueError(f"got {len(histories)} histories but {truth.size} truths")
        remaining = np.clip(np.nan_to_num(truth, nan=ORACLE_MAX, posinf=ORACLE_MAX), 0.0, ORACLE_MAX)
        return Forecast(np.repeat(remaining[:, None], 3, axis=1), np.ones(truth.size, dtype=bool))
