"""A single-agent Gymnasium view of the AEC env in which every step is one node's turn.

One policy shared by all nodes (parameter sharing) sees the acting node's observation vector and
chooses its action; ``action_masks()`` gives that node's mask, which is what sb3-contrib's
``MaskablePPO`` asks an env for. The reward of a step is the acting node's reward in the AEC env:
0 for all but the last node of a slot, which receives the slot's team reward. This is the pattern of
PettingZoo's action-masking tutorial for Stable-Baselines3, for a cooperative env.
"""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np

from mara_env.env import raw_env


class NodeTurnEnv(gymnasium.Env):
    """One AEC node turn per ``step``; keyword arguments go to ``mara_env.raw_env``.

    ``invalid_action`` defaults to ``"idle"`` here (a learner without masks, or Gymnasium's env
    checker, may pick a masked action: it is played as idle and counted in ``info``).
    """

    metadata = {"render_modes": ["ansi", "rgb_array"], "render_fps": 4}

    def __init__(self, **env_kwargs: Any) -> None:
        self.aec = raw_env(**{"invalid_action": "idle", **env_kwargs})
        agent = self.aec.possible_agents[0]
        self.observation_space = self.aec.observation_space(agent)["observation"]
        self.action_space = self.aec.action_space(agent)
        self.render_mode = env_kwargs.get("render_mode")

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self.aec.reset(seed=seed, options=options)
        return self.aec.observe(self.aec.agent_selection)["observation"], {}

    def step(self, action: int):
        agent = self.aec.agent_selection
        self.aec.step(int(action))
        reward = float(self.aec.rewards[agent])
        done = self.aec.terminations[agent] or self.aec.truncations[agent]
        info = dict(self.aec.infos[agent])
        observation = self.aec.observe(self.aec.agent_selection)["observation"]
        terminated = bool(self.aec.terminations[agent])
        return observation, reward, terminated, bool(done and not terminated), info

    def action_masks(self) -> np.ndarray:
        """The acting node's mask as booleans (the method ``MaskablePPO`` calls)."""
        return self.aec.action_mask(self.aec.agent_selection).astype(bool)

    def render(self):
        return self.aec.render()
