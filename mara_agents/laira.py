"""``laira``: LaiRA (AAAI 2026) adapted to discrete nodes, from its published description.

- **Dynamic Kalman filter**: per task, drifting power-law parameters filtered over the task's
  history (the shared ``dkf`` forecaster), rebuilt from the observation windows.
- **Look-ahead feasibility check with an upper confidence bound**: a task stays a candidate while
  its optimistic remaining work (the filter's p10, a lower confidence bound on the work, i.e. an
  upper confidence bound on its progress) fits before its deadline on the nodes that are up, so a
  task is dropped only when even the optimistic view says it cannot finish.
- **Allocation ratio**: candidates are admitted fewest nodes first (ties to the earlier deadline),
  each with the fewest whole nodes that finish its *median* estimate in time; spare nodes go to the
  tightest admitted task (none to a candidate that was not admitted).
- **Adaptive time slicing**: the plan is redone every slot, and a node stays on the task it trained
  last slot whenever the plan still wants a node there, so allocations change only when estimates do.

Variants we measured on the synthetic train load (10 seeds, completion rate): ranking candidates by
the ratio of reachable capacity to optimistic work (a UCB score) 44%; sizing by the optimistic p10
when the median does not fit 44%; hedging spare nodes on non-admitted candidates 62%, but that
keeps feeding tasks its own estimate calls infeasible, which the baseline must not do; the rule
above 55%.
"""

from __future__ import annotations

import numpy as np

from mara_agents.base import NO_FORECASTS
from mara_agents.planning import PlanningScheduler, capacity, greedy_allocation
from mara_env.forecast import MAX_REMAINING, DKFForecaster
from mara_env.observation import DecodedObservation


class LaiRAScheduler(PlanningScheduler):
    """Parameters: ``explore_points`` (observations before the filter is trusted)."""

    requirements = NO_FORECASTS  # its own Kalman filter on the windows, not the env's forecasts

    def __init__(self, explore_points: int = 3, seed: int = 0):
        self.estimator = DKFForecaster()
        self.explore_points = explore_points
        super().__init__(seed)

    def plan(self, obs: DecodedObservation) -> np.ndarray:
        k = obs.layout.max_tasks
        rows = np.flatnonzero(obs.present)
        slots, alpha, nodes = obs.slots_left, obs.row("scaling_exponent"), obs.up_nodes
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
        order = candidates[np.argsort(slots[candidates], kind="stable")]
        counts, explore = self.explore(obs, rows[exploring[rows]], nodes)
        counts += greedy_allocation(mid, slots, alpha, nodes - explore.size, order, hedge=False)
        self.plan_order = explore.tolist() + order.tolist()
        return counts
