"""``laira``: LaiRA (AAAI 2026) adapted to discrete nodes, from its published description.

- **Dynamic Kalman filter**: per task, drifting power-law parameters filtered over the task's
  history (the shared ``dkf`` forecaster), rebuilt from the observation windows.
- **Look-ahead feasibility check**: a task stays a candidate only while its optimistic remaining
  work (the filter's p10) fits before its deadline on the nodes that are up.
- **UCB allocation ratio**: candidates are ranked by an upper confidence bound on their chance to
  finish: the ratio of the capacity they could still get to their optimistic (lower-bound) remaining
  work; admitted in that order with the fewest nodes that finish their median estimate in time, or
  their optimistic one when the median does not fit.
- **Adaptive time slicing**: a task that trained last slot keeps its place ahead of equally ranked
  ones (its nodes need no restore), so allocations change only when the ranking does.
"""

from __future__ import annotations

import numpy as np

from mara_agents.planning import PlanningScheduler, capacity, greedy_allocation, min_nodes
from mara_env.forecast import MAX_REMAINING, DKFForecaster
from mara_env.observation import DecodedObservation


class LaiRAScheduler(PlanningScheduler):
    """Parameters: ``explore_points`` (observations before the filter is trusted)."""

    def __init__(self, explore_points: int = 3, seed: int = 0):
        self.estimator = DKFForecaster()
        self.explore_points = explore_points
        super().__init__(seed)

    def plan(self, obs: DecodedObservation) -> np.ndarray:
        k = obs.layout.max_tasks
        rows = np.flatnonzero(obs.row("present") > 0)
        slots, alpha, nodes = self.slots_left(obs), obs.row("scaling_exponent"), self.up_nodes(obs)
        low, mid = np.full(k, MAX_REMAINING), np.full(k, MAX_REMAINING)
        exploring = np.zeros(k, dtype=bool)
        if rows.size:
            histories = [self.memory.history(int(r)) for r in rows]
            forecast = self.estimator.predict(histories, obs.row("target")[rows])
            low[rows] = np.where(forecast.known, forecast.remaining[:, 0], MAX_REMAINING)
            mid[rows] = np.where(forecast.known, forecast.remaining[:, 1], MAX_REMAINING)
            exploring[rows] = np.array([h[0].size for h in histories]) < self.explore_points
        reach = capacity(np.full(k, nodes), slots, alpha)
        candidates = rows[~exploring[rows] & (low[rows] <= reach[rows])]
        ucb = reach / np.maximum(low, 1e-6)
        running = obs.row("nodes_last_slot") > 0
        order = candidates[np.lexsort((~running[candidates], -ucb[candidates]))]
        sizing = np.where(min_nodes(mid, slots, alpha, nodes) <= nodes, mid, low)
        counts, explore = self.explore(obs, rows[exploring[rows]], nodes)
        counts += greedy_allocation(sizing, slots, alpha, nodes - explore.size, order, fewest_nodes_first=False)
        self.plan_order = explore.tolist() + order.tolist()
        return counts
