"""``oracle``: a clairvoyant heuristic. Knows every task's true remaining work.

It reads the truth from the observation's forecast features, which the env fills with the true
remaining work when configured with ``forecaster="oracle"`` (its ``requirements`` say so, and
``evaluate`` and ``mara bench`` read them): it acts on
the observation alone, like every other scheduler. Its rule (documented, not an exact optimum):
admit the tasks that can still finish, fewest nodes needed first, each with the fewest nodes that
finish it exactly in time, and give spare nodes to the tightest admitted task.
"""

from __future__ import annotations

import numpy as np

from mara_agents.base import EnvRequirements
from mara_agents.planning import PlanningScheduler, greedy_allocation
from mara_env.observation import DecodedObservation


class OracleScheduler(PlanningScheduler):
    requirements = EnvRequirements(forecaster="oracle")

    def plan(self, obs: DecodedObservation) -> np.ndarray:
        present = obs.present
        if present.any() and not np.all(obs.forecast_valid[present]):
            raise ValueError("the oracle scheduler needs the env to run with forecaster='oracle'")
        remaining = obs.remaining("p50")
        slots = obs.slots_left
        order = np.flatnonzero(present)
        order = order[np.argsort(slots[order], kind="stable")]
        self.plan_order = order.tolist()
        alpha = obs.row("scaling_exponent")
        return greedy_allocation(remaining, slots, alpha, obs.up_nodes, order, hedge=False)
