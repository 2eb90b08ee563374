"""``oracle``: the clairvoyant upper bound. Knows every task's true remaining work.

It reads the truth from the observation's forecast features, which the env fills with the true
remaining work when configured with ``forecaster="oracle"`` (``evaluate`` does so for it): it acts on
the observation alone, like every other scheduler. Its rule (documented, not an exact optimum):
admit the tasks that can still finish, fewest nodes needed first, each with the fewest nodes that
finish it exactly in time, and give spare nodes to the tightest admitted task.
"""

from __future__ import annotations

import numpy as np

from mara_agents.planning import PlanningScheduler, greedy_allocation
from mara_env.observation import WORK_SCALE, DecodedObservation


class OracleScheduler(PlanningScheduler):
    env_kwargs = {"forecaster": "oracle"}

    def plan(self, obs: DecodedObservation) -> np.ndarray:
        present = obs.row("present") > 0
        if present.any() and not np.all(obs.row("forecast_valid")[present] > 0):
            raise ValueError("the oracle scheduler needs the env to run with forecaster='oracle'")
        remaining = obs.row("remaining_p50") * WORK_SCALE
        slots = self.slots_left(obs)
        order = np.flatnonzero(present)
        order = order[np.argsort(slots[order], kind="stable")]
        self.plan_order = order.tolist()
        alpha = obs.row("scaling_exponent")
        return greedy_allocation(remaining, slots, alpha, self.up_nodes(obs), order, hedge=False)
