"""Planner hints: the ``srw`` plan and the deadline order of a slot, as row features for the MARA slot actor.

A generalist policy must work at any cluster size, and at 32 nodes or more the slot actor cloned from
``srw`` agreed with it on only about 75% of turns (docs/mara_policy.md): reconstructing a whole
slot's plan from forecast columns is hard for a small network. So the actor may read the plan itself.
Both features are a pure function of the observation (``srw`` reads only the observation's forecast
columns and row features; no memory, no privileged information), recomputed from the vector wherever
the network runs:

- ``plan_share``: the nodes the plan gives the row this slot / ``M`` (the scale of ``chosen_now``, so
  ``plan_share - chosen_now > 0`` says the plan still wants a node there);
- ``plan_rank``: ``1 - position / len(plan)`` for rows in the plan's priority order, 0 for the rest;
- ``deadline_rank``: ``1 - (present rows due strictly earlier) / (present rows)``, 0 for empty rows:
  what ``edf`` serves first (it wins where forecasts mislead ``srw``, on ``rl`` curves).

The policy is free to depart from the plan: PPO trains it on the team's reward, and the hints are
inputs, not actions. ``--no-hints`` in ``examples/train_mara.py`` is the ablation.
"""

from __future__ import annotations

import numpy as np

from mara_agents.srw import SRWScheduler
from mara_env.observation import decode

HINT_FEATURES = ("plan_share", "plan_rank", "deadline_rank")


def planner_hints(vectors: np.ndarray, planner: SRWScheduler | None = None) -> np.ndarray:
    """``(n, K_max, 3)`` hints for a batch of observation vectors of one layout (``K_max`` from the header).

    ``planner``: an ``srw`` to plan with (its plan reads only the observation; a caller that asks for
    hints at every slot keeps one instead of building one per call). Raises ``ValueError`` for
    observations without forecast features (``srw`` plans on them).
    """
    planner = SRWScheduler() if planner is None else planner
    vectors = np.asarray(vectors, dtype=np.float32)
    out: np.ndarray | None = None
    for i, vector in enumerate(vectors):
        obs = decode(vector)
        if not obs.has_forecasts:
            raise ValueError(
                "planner hints need forecast features: train and run a hinted MARA policy on an env with a "
                "forecaster (flow, wls or dkf), or use a network built with planner_hints=False"
            )
        if out is None:
            out = np.zeros((len(vectors), obs.layout.max_tasks, len(HINT_FEATURES)), dtype=np.float32)
        counts = planner.plan(obs)
        out[i, :, 0] = counts / obs.layout.num_nodes
        order = np.asarray(planner.plan_order, dtype=np.int64)
        out[i, order, 1] = 1.0 - np.arange(order.size) / max(order.size, 1)
        present = np.flatnonzero(obs.present)
        due = obs.slots_left[present]
        earlier = (due[None, :] < due[:, None]).sum(axis=1)  # equal deadlines share a rank, as in edf
        out[i, present, 2] = 1.0 - earlier / max(present.size, 1)
    if out is None:
        raise ValueError("planner_hints needs at least one observation vector")
    return out
