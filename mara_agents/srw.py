"""``srw``: shortest remaining forecast work first, among tasks the forecaster deems feasible.

Reads the env's forecast features (``evaluate`` runs the env with ``forecaster="flow"`` unless told
otherwise). A task is feasible when its optimistic remaining work (p10) fits in its slots left on all
the nodes that are up; feasible tasks are served shortest median remaining work first, each with the
fewest nodes that finish its median in time. A task without a forecast yet (fewer than two observed
points) first gets one node to be observed.
"""

from __future__ import annotations

import numpy as np

from mara_agents.planning import PlanningScheduler, capacity, greedy_allocation
from mara_env.observation import WORK_SCALE, DecodedObservation


class SRWScheduler(PlanningScheduler):
    """Parameters: ``forecaster``, the env forecaster whose features it reads (default ``flow``)."""

    def __init__(self, forecaster: str = "flow", seed: int | None = 0) -> None:
        self.env_kwargs = {"forecaster": forecaster}
        super().__init__(seed)

    def plan(self, obs: DecodedObservation) -> np.ndarray:
        present, valid = obs.row("present") > 0, obs.row("forecast_valid") > 0
        slots, alpha, nodes = self.slots_left(obs), obs.row("scaling_exponent"), self.up_nodes(obs)
        p10, p50 = obs.row("remaining_p10") * WORK_SCALE, obs.row("remaining_p50") * WORK_SCALE
        feasible = present & valid & (p10 <= capacity(np.full(p10.shape, nodes), slots, alpha))
        order = np.flatnonzero(feasible)
        order = order[np.argsort(p50[order], kind="stable")]
        counts, explore = self.explore(obs, np.flatnonzero(present & ~valid), nodes)
        counts += greedy_allocation(p50, slots, alpha, nodes - explore.size, order, fewest_nodes_first=False)
        self.plan_order = explore.tolist() + order.tolist()
        return counts
