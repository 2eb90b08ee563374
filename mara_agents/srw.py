"""``srw``: shortest remaining forecast work first, among tasks the forecaster deems feasible.

Reads the env's forecast features: its ``requirements`` ask for them, so ``evaluate`` and ``mara bench``
run it on the env's default forecaster (``flow``) unless told otherwise. A task is feasible when its
optimistic remaining work (p10) fits in its slots left on all the nodes that are up; feasible tasks
are served shortest median remaining work first, each with the fewest nodes that finish its median
in time. A task without a forecast yet (fewer than two observed points) first gets one node to be
observed.
"""

from __future__ import annotations

import numpy as np

from mara_agents.base import EnvRequirements
from mara_agents.planning import PlanningScheduler, capacity, greedy_allocation
from mara_env.observation import DecodedObservation


class SRWScheduler(PlanningScheduler):
    """Parameters: ``forecaster``, a forecaster it insists on (default ``None``: whichever the env has,
    by default the env's default ``flow``)."""

    def __init__(self, forecaster: str | None = None, seed: int | None = 0) -> None:
        self.requirements = EnvRequirements(forecaster=forecaster)
        super().__init__(seed)

    def plan(self, obs: DecodedObservation) -> np.ndarray:
        present, valid = obs.present, obs.forecast_valid
        slots, alpha, nodes = obs.slots_left, obs.row("scaling_exponent"), obs.up_nodes
        p10, p50 = obs.remaining("p10"), obs.remaining("p50")
        feasible = present & valid & (p10 <= capacity(np.full(p10.shape, nodes), slots, alpha))
        order = np.flatnonzero(feasible)
        order = order[np.argsort(p50[order], kind="stable")]
        counts, explore = self.explore(obs, np.flatnonzero(present & ~valid), nodes)
        counts += greedy_allocation(p50, slots, alpha, nodes - explore.size, order, fewest_nodes_first=False)
        self.plan_order = explore.tolist() + order.tolist()
        return counts
