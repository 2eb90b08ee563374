"""Forecast features of the task table, computed once per slot and cached per task.

A task's forecast changes only when it reports a new loss, so at the start of each slot the
forecaster runs once, batched, over the tasks with new observations; the others reuse their cached
quantiles. The probability of finishing in time depends on the clock and on the task's current
share of nodes, so it is refreshed every slot from the (cached) quantiles. With an
:class:`~mara_env.forecast.in_episode.InEpisodeCalibration` the quantiles are scaled by the episode's
shift as they are written (the cache keeps the forecaster's own answers).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from mara_env.forecast.base import MAX_REMAINING, Z90, Forecaster, ReseedableForecaster
from mara_env.forecast.in_episode import InEpisodeCalibration
from mara_env.observation import WORK_SCALE

if TYPE_CHECKING:
    from mara_env.core import Simulator, TaskState


def normal_cdf(z: np.ndarray) -> np.ndarray:
    """Standard normal CDF (Abramowitz and Stegun 7.1.26 for erf; absolute error below 1.5e-7)."""
    x = np.abs(z) / math.sqrt(2.0)
    t = 1.0 / (1.0 + 0.3275911 * x)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    erf = 1.0 - poly * np.exp(-x * x)
    return 0.5 * (1.0 + np.sign(z) * erf)


def probability_within(quantiles: np.ndarray, capacity: np.ndarray, hopeless_at: float = MAX_REMAINING) -> np.ndarray:
    """P(remaining <= capacity) for log-normal remaining work through the p50 and p90 quantiles.

    A median at or above ``hopeless_at`` (the forecaster's cap: "not within reach") gives 0.
    """
    p50 = np.maximum(quantiles[:, 1], 1e-9)
    sd = np.maximum((np.log(np.maximum(quantiles[:, 2], 1e-9)) - np.log(p50)) / Z90, 1e-3)
    z = (np.log(np.maximum(capacity, 1e-9)) - np.log(p50)) / sd
    prob = normal_cdf(z)
    prob = np.where(quantiles[:, 1] <= 0.0, 1.0, prob)
    return np.where(quantiles[:, 1] >= hopeless_at, 0.0, prob)


def share_capacity(task: TaskState, slots_left: int) -> float:
    """Work the task gets by its deadline if it keeps its current share (at least one node)."""
    n = max(task.nodes_last_slot, 1)
    return slots_left * n**task.spec.scaling_exponent


class ForecastFeatures:
    """Per-slot forecast features ``(K_max, 5)``: p10, p50, p90 / WORK_SCALE, p_finish, valid."""

    def __init__(self, forecaster: Forecaster, max_tasks: int, calibration: InEpisodeCalibration | None = None) -> None:
        self.forecaster = forecaster
        self.max_tasks = max_tasks
        self.calibration = calibration
        # The oracle's answers are uncapped (up to the observation's bound); forecasters cap at MAX_REMAINING.
        self.hopeless_at = float(getattr(forecaster, "max_remaining", MAX_REMAINING))
        self._cache: dict[int, tuple[int, np.ndarray, bool]] = {}
        self._seen: dict[int, TaskState] = {}  # last slot's live tasks, to tell which finished

    def reset(self, noise_seed: int | None = None) -> None:
        """Forget the episode's forecasts; a forecaster that draws noise restarts it from ``noise_seed``."""
        self._cache, self._seen = {}, {}
        if self.calibration is not None:
            self.calibration.reset()
        if noise_seed is not None and isinstance(self.forecaster, ReseedableForecaster):
            self.forecaster.reseed(noise_seed)

    def features(self, sim: Simulator) -> np.ndarray:
        live = [(row, t) for row, t in enumerate(sim.rows) if t is not None]
        stale = [t for _, t in live if self._cache.get(t.spec.task_id, (-1,))[0] != len(t.history_work)]
        if stale:
            self._refresh(stale)
        self._cache = {t.spec.task_id: self._cache[t.spec.task_id] for _, t in live}
        if self.calibration is not None:
            self._calibrate(live)
        out = np.zeros((self.max_tasks, 5), dtype=np.float32)
        if not live:
            return out
        rows = np.array([row for row, _ in live])
        quantiles = np.array([self._cache[t.spec.task_id][1] for _, t in live])
        valid = np.array([self._cache[t.spec.task_id][2] for _, t in live])
        if self.calibration is not None:
            quantiles = self.calibration.apply(quantiles, valid, self.hopeless_at)
        capacity = np.array([share_capacity(t, t.spec.deadline - sim.slot + 1) for _, t in live])
        out[rows, :3] = quantiles / WORK_SCALE
        out[rows, 3] = np.where(valid, probability_within(quantiles, capacity, self.hopeless_at), 0.0)
        out[rows, 4] = valid
        return out

    def _calibrate(self, live: list[tuple[int, TaskState]]) -> None:
        """Tell the calibration which tasks left since last slot (finished or not) and the first
        usable forecast of each live one."""
        now = {t.spec.task_id: t for _, t in live}
        for task_id, task in self._seen.items():
            if task_id not in now:
                if task.reached_target:  # the target was crossed in the last slot: take its middle
                    before = task.history_work[-2] if len(task.history_work) > 1 else task.work
                    self.calibration.finished(task_id, (before + task.work) / 2)
                else:
                    self.calibration.forget(task_id)
        for task_id, task in now.items():
            _, quantiles, valid = self._cache[task_id]
            if valid:
                self.calibration.first_forecast(task_id, task.work, float(quantiles[1]), self.hopeless_at)
        self._seen = now

    def _refresh(self, tasks: list[TaskState]) -> None:
        histories = [(np.asarray(t.history_work), np.asarray(t.history_loss)) for t in tasks]
        targets = [t.spec.target for t in tasks]
        if getattr(self.forecaster, "needs_truth", False):
            truth = [max(t.spec.required_work - t.work, 0.0) for t in tasks]
            forecast = self.forecaster.predict(histories, targets, truth=truth)
        else:
            forecast = self.forecaster.predict(histories, targets)
        for k, task in enumerate(tasks):
            self._cache[task.spec.task_id] = (len(task.history_work), forecast.remaining[k], bool(forecast.known[k]))
