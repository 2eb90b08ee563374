"""``lara``: LARA (ICML 2024) adapted to discrete nodes, from its published description.

- **Online estimator**: per task, a power law fitted by discounted ridge WLS in log-log space
  (the shared ``wls`` forecaster) on the task's whole observed history, which the scheduler
  rebuilds from the observation windows slot after slot.
- **Explore then exploit**: a task with fewer than ``explore_points`` observations gets one node
  (if any is left) before any estimate is trusted.
- **Adaptive allocation search**: every slot, drop the tasks that cannot finish before their
  deadline even on all nodes by the optimistic end of the estimate (its p10), then admit the
  others fewest nodes needed first (this maximises how many finish), each with the fewest whole
  nodes that finish its inflated median given the task's ``n ** alpha`` scaling and a switch cost;
  spare nodes hedge one each on candidates not admitted, then go to the tightest admitted task.
- **Balancing margin**: estimates are inflated by ``exp(e)``, where ``e`` is a running mean of the
  scheduler's own prediction error: how far each task's new estimate lands from the previous one
  minus the work done in between.
"""

from __future__ import annotations

import numpy as np

from mara_agents.base import NO_FORECASTS
from mara_agents.planning import PlanningScheduler, greedy_allocation, min_nodes
from mara_env.forecast import MAX_REMAINING, WLSForecaster
from mara_env.observation import DecodedObservation


class LARAScheduler(PlanningScheduler):
    """Parameters: ``explore_points`` (observations before a fit is trusted), ``error_decay``
    (weight of the newest error in the running mean), ``max_margin`` (cap of the inflation)."""

    requirements = NO_FORECASTS  # its own WLS fit on the windows, not the env's forecasts

    def __init__(self, explore_points: int = 3, error_decay: float = 0.1, max_margin: float = 2.0, seed: int = 0):
        self.estimator = WLSForecaster()
        self.explore_points, self.error_decay, self.max_margin = explore_points, error_decay, max_margin
        super().__init__(seed)

    def reset(self, seed: int | None = None) -> None:
        super().reset(seed)
        self.error = 0.0
        self._last: dict[int, tuple[float, float]] = {}  # row -> (work then, estimate then)

    def estimates(self, obs: DecodedObservation, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per row: p10 and p50 of the remaining work (``MAX_REMAINING`` if unknown); still exploring."""
        histories = [self.memory.history(int(r)) for r in rows]
        forecast = self.estimator.predict(histories, obs.row("target")[rows])
        points = np.array([h[0].size for h in histories])
        low, mid = (np.where(forecast.known, forecast.remaining[:, q], MAX_REMAINING) for q in (0, 1))
        return low, mid, points < self.explore_points

    def plan(self, obs: DecodedObservation) -> np.ndarray:
        rows = np.flatnonzero(obs.present)
        low, remaining = np.full(obs.layout.max_tasks, MAX_REMAINING), np.full(obs.layout.max_tasks, MAX_REMAINING)
        exploring = np.zeros(obs.layout.max_tasks, dtype=bool)
        if rows.size:
            low[rows], remaining[rows], exploring[rows] = self.estimates(obs, rows)
        self._track_error(obs, rows, remaining)
        inflated = remaining * min(np.exp(self.error), self.max_margin)
        slots, alpha, nodes = obs.slots_left, obs.row("scaling_exponent"), obs.up_nodes
        counts, explore = self.explore(obs, rows[exploring[rows]], nodes)
        exploit = rows[~exploring[rows]]
        exploit = exploit[min_nodes(low[exploit], slots[exploit], alpha[exploit], nodes) <= nodes]
        exploit = exploit[np.argsort(slots[exploit], kind="stable")]
        counts += greedy_allocation(inflated, slots, alpha, nodes - explore.size, exploit)
        self.plan_order = explore.tolist() + exploit.tolist()
        return counts

    def _track_error(self, obs: DecodedObservation, rows: np.ndarray, remaining: np.ndarray) -> None:
        work = obs.work_done
        current = {}
        for row in rows.tolist():
            if remaining[row] >= MAX_REMAINING:
                continue
            if row in self._last:
                then_work, then_estimate = self._last[row]
                expected = then_estimate - (work[row] - then_work)
                if expected > 0 and remaining[row] > 0 and work[row] > then_work:
                    err = abs(np.log(expected / remaining[row]))
                    self.error += self.error_decay * (err - self.error)
            current[row] = (work[row], remaining[row])
        self._last = current
