"""In-episode calibration: rescale an episode's forecasts by the work its finished tasks needed.

A forecaster fitted on one family of curves can be biased on another, and the bias is shared by
most tasks of one workload: the flow over-forecasts the remaining work of ``rl`` and ``tabular``
tasks, so ``srw`` gives them more nodes than they need and admits fewer. The env sees every task
that reaches its target and the work it took then, which any cluster observes too, so it can
measure the bias while the episode runs. For each finished task it takes the work the task needed
after its first forecast and the median of that forecast: the log of their ratio. The median of
the latest :attr:`InEpisodeCalibration.window` ratios, shrunk toward 0 by ``n / (n + prior)``
while there are few and capped at ``max_log_shift``, is the episode's log shift; every forecast's
remaining-work quantiles are multiplied by its exponential.

Only finished tasks count: an expired task says only that it needed more than it got. Under
overload the tasks that finish are the easier ones, so the shift then leans optimistic; the
shrinkage and the cap bound it. Answers at the forecaster's "not within reach" cap stay there.
"""

from __future__ import annotations

import math
from collections import deque

import numpy as np

from mara_env.forecast.base import MAX_REMAINING


class InEpisodeCalibration:
    """The log shift of one episode's forecasts, learnt from its finished tasks.

    Parameters
    ----------
    prior:
        Pseudo-count of unbiased tasks the shift is shrunk toward (``n / (n + prior)``), > 0.
    window:
        How many of the latest finished tasks the median reads, >= 1.
    max_log_shift:
        Cap on the absolute log shift (1.5: forecasts scaled by at most 4.5 either way), > 0.
    """

    def __init__(self, prior: float = 20.0, window: int = 200, max_log_shift: float = 1.5) -> None:
        for name, value in (("prior", prior), ("max_log_shift", max_log_shift)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
                raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
        if isinstance(window, bool) or not isinstance(window, int) or window < 1:
            raise ValueError(f"window must be an integer >= 1, got {window!r}")
        self.prior, self.window, self.max_log_shift = float(prior), window, float(max_log_shift)
        self.reset()

    def reset(self) -> None:
        """Forget the episode: no first forecasts, no finished tasks, a shift of 0."""
        self._first: dict[int, tuple[float, float]] = {}
        self._log_ratios: deque[float] = deque(maxlen=self.window)

    def first_forecast(self, task_id: int, work: float, median: float, hopeless_at: float = MAX_REMAINING) -> None:
        """Note a task's first usable forecast (its median remaining work at cumulative ``work``);
        later calls for the same task are ignored, as are medians of 0 or at ``hopeless_at``."""
        if task_id not in self._first and 0.0 < median < hopeless_at:
            self._first[task_id] = (float(work), float(median))

    def finished(self, task_id: int, work: float) -> None:
        """A task reached its target at cumulative ``work``: one more ratio, if it had a forecast."""
        first = self._first.pop(task_id, None)
        if first is not None and work > first[0]:
            self._log_ratios.append(math.log((work - first[0]) / first[1]))

    def forget(self, task_id: int) -> None:
        """A task left without reaching its target (it expired): it tells nothing usable."""
        self._first.pop(task_id, None)

    @property
    def finished_count(self) -> int:
        """Finished tasks the shift reads now (at most ``window``)."""
        return len(self._log_ratios)

    @property
    def log_shift(self) -> float:
        """The median log ratio, shrunk by ``n / (n + prior)`` and capped at ``max_log_shift``."""
        n = len(self._log_ratios)
        if n == 0:
            return 0.0
        shift = float(np.median(np.fromiter(self._log_ratios, dtype=np.float64))) * n / (n + self.prior)
        return float(np.clip(shift, -self.max_log_shift, self.max_log_shift))

    def apply(self, quantiles: np.ndarray, valid: np.ndarray, hopeless_at: float = MAX_REMAINING) -> np.ndarray:
        """``(n, 3)`` remaining-work quantiles scaled by the shift where ``valid``; values at or
        above ``hopeless_at`` (the forecaster's cap) are left as they are, the rest capped below it."""
        shift = self.log_shift
        if shift == 0.0:
            return quantiles
        scaled = np.minimum(quantiles * math.exp(shift), hopeless_at)
        keep = ~np.asarray(valid, dtype=bool)[:, None] | (quantiles >= hopeless_at)
        return np.where(keep, quantiles, scaled)
