"""A single-agent, centralised Gymnasium view: one ``MultiDiscrete`` action per slot, one entry per node.

``gymnasium.make("mara/CentralScheduler-v0", num_nodes=8)`` plays the same simulator as the
PettingZoo env: entry ``i`` of the action is node ``i``'s choice (0 idle, ``j`` table row ``j - 1``),
applied node after node so the joint action is exactly one AEC cycle. The observation is the env's
global ``state()`` and the per-node action masks; a masked entry is played as idle and counted in
``info["invalid_actions"]`` (a single-agent learner cannot be stopped per node mid-slot). The reward is
the team reward of the slot.
"""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces

from mara_env.env import raw_env

CENTRAL_ID = "mara/CentralScheduler-v0"


class CentralSchedulerEnv(gymnasium.Env):
    """Centralised single-agent view of ``mara_env.raw_env`` (same keyword arguments).

    ``invalid_action`` is fixed to ``"idle"``; everything else is passed through.
    """

    metadata = {"render_modes": ["ansi", "rgb_array"], "render_fps": 4}

    def __init__(self, render_mode: str | None = None, **env_kwargs: Any) -> None:
        if "invalid_action" in env_kwargs:
            raise ValueError("invalid_action is fixed to 'idle' in the central view; do not pass it")
        self.aec = raw_env(render_mode=render_mode, invalid_action="idle", **env_kwargs)
        self.render_mode = render_mode
        m, k = self.aec.sim_config.num_nodes, self.aec.layout.max_tasks
        self.observation_space = spaces.Dict(
            {"observation": self.aec.state_space, "action_mask": spaces.Box(0, 1, shape=(m, k + 1), dtype=np.int8)}
        )
        self.action_space = spaces.MultiDiscrete(np.full(m, k + 1))

    def _observation(self) -> dict[str, np.ndarray]:
        masks = np.stack([self.aec.action_mask(a) for a in self.aec.possible_agents])
        return {"observation": self.aec.state(), "action_mask": masks}

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self.aec.reset(seed=seed, options=options)
        return self._observation(), {}

    def step(self, action: np.ndarray):
        action = np.asarray(action)
        if action.shape != self.action_space.shape:
            raise ValueError(f"action must have shape {self.action_space.shape}, got {action.shape}")
        before = self.aec._invalid_actions
        first = self.aec.agent_selection
        for node_action in action.tolist():
            self.aec.step(int(node_action))
        info = dict(self.aec.infos[first])
        info["invalid_actions_this_slot"] = self.aec._invalid_actions - before
        terminated = bool(self.aec.terminations[first])
        truncated = bool(self.aec.truncations[first])
        return self._observation(), float(self.aec.rewards[first]), terminated, truncated, info

    def render(self):
        return self.aec.render()


def register() -> None:
    """Register the central view with Gymnasium (done when ``mara_env`` is imported)."""
    if CENTRAL_ID not in gymnasium.registry:
        gymnasium.register(id=CENTRAL_ID, entry_point="mara_env.central:CentralSchedulerEnv")
