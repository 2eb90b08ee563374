"""RLlib (new API stack) adapter: the env as an RLlib multi-agent env, PPO with action masking.

Needs ``pip install "ray[rllib]"`` (the ``rllib`` extra); nothing imports this module at package
import time, so Ray stays optional. One policy (``"shared"``) acts for every node, turn after turn
through the AEC env (RLlib's ``PettingZooEnv``), so a node sees what the nodes before it chose this
slot, as in :mod:`mara_env`'s own runner. The RL module applies the observation's ``action_mask``
to the policy's logits when sampling, acting and training, so a masked action is never sampled.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from ray.rllib.algorithms.ppo import PPOConfig
from ray.rllib.algorithms.ppo.torch.default_ppo_torch_rl_module import DefaultPPOTorchRLModule
from ray.rllib.core.columns import Columns
from ray.rllib.core.rl_module.rl_module import RLModuleSpec
from ray.rllib.env.wrappers.pettingzoo_env import PettingZooEnv
from ray.tune.registry import register_env

import mara_env
from mara_agents.base import EnvRequirements

ENV_NAME = "mara_cluster_scheduling"
POLICY_ID = "shared"
# Env settings that shape the observation vector the policy was trained on.
OBSERVATION_SETTINGS = ("max_tasks", "history_window")


def make_env(config: dict[str, Any] | None = None) -> PettingZooEnv:
    """RLlib env creator: ``mara_env.env(**config)`` as an RLlib ``MultiAgentEnv`` (one node per step)."""
    return PettingZooEnv(mara_env.env(**dict(config or {})))


def register(name: str = ENV_NAME) -> str:
    """Register :func:`make_env` with Ray Tune under ``name`` (needed on every process that builds envs)."""
    register_env(name, make_env)
    return name


class MaskedPPOTorchRLModule(DefaultPPOTorchRLModule):
    """RLlib's default PPO module on ``observation["observation"]``, with masked actions' logits at -inf.

    The networks are built for the flat observation vector; the ``action_mask`` part of the Dict
    observation only masks the logits (idle is always allowed, so a row is never fully masked).
    """

    def __init__(self, *, observation_space: gym.spaces.Dict | None = None, **kwargs: Any) -> None:
        if not isinstance(observation_space, gym.spaces.Dict) or set(observation_space) != {
            "observation",
            "action_mask",
        }:
            raise ValueError(
                "observation_space must be mara_env's Dict space with keys 'observation' and 'action_mask', "
                f"got {observation_space!r}"
            )
        super().__init__(observation_space=observation_space["observation"], **kwargs)
        self.observation_space = observation_space  # what the env runners check the env against

    def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        mask, inner = _split(batch)
        return _masked(super()._forward(inner, **kwargs), mask)

    def _forward_train(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        mask, inner = _split(batch)
        return _masked(super()._forward_train(inner, **kwargs), mask)

    def compute_values(self, batch: dict[str, Any], embeddings: Any = None) -> torch.Tensor:
        return super().compute_values(_split(batch)[1], embeddings)


def _split(batch: dict[str, Any]) -> tuple[torch.Tensor, dict[str, Any]]:
    """The action mask, and a shallow copy of the batch whose observation is the flat vector."""
    obs = batch[Columns.OBS]
    return obs["action_mask"], {**batch, Columns.OBS: obs["observation"]}


def _masked(out: dict[str, Any], mask: torch.Tensor) -> dict[str, Any]:
    logits = out[Columns.ACTION_DIST_INPUTS]
    out[Columns.ACTION_DIST_INPUTS] = logits.masked_fill(mask == 0, torch.finfo(logits.dtype).min)
    return out


def ppo_config(
    env_config: dict[str, Any] | None = None,
    *,
    train_batch_size: int = 4000,
    minibatch_size: int = 256,
    num_epochs: int = 4,
    num_env_runners: int = 0,
    hidden: tuple[int, ...] = (256, 256),
    seed: int = 0,
) -> PPOConfig:
    """PPO on the registered env: one shared masked policy for every node, sizes counted in node turns.

    ``num_env_runners=0`` samples in the driver process; raise it to sample on more Ray workers
    (local cores or a cluster's nodes).
    """
    name = register()
    return (
        PPOConfig()
        .environment(name, env_config=dict(env_config or {}))
        .env_runners(num_env_runners=num_env_runners)
        .multi_agent(policies={POLICY_ID}, policy_mapping_fn=_shared_policy)
        .rl_module(
            rl_module_spec=RLModuleSpec(
                module_class=MaskedPPOTorchRLModule,
                model_config={"fcnet_hiddens": list(hidden), "vf_share_layers": False},
            )
        )
        .training(train_batch_size_per_learner=train_batch_size, minibatch_size=minibatch_size, num_epochs=num_epochs)
        .debugging(seed=seed)
    )


def _shared_policy(agent_id: str, episode: Any = None, **kwargs: Any) -> str:
    return POLICY_ID


class RLlibScheduler:
    """A trained masked RL module as a :class:`mara_agents.Scheduler` (for ``mara_agents.evaluate``).

    ``trained_env`` holds the ``raw_env`` keywords it was trained with (as for ``SB3Scheduler``): the
    runner then plays it with the same forecaster and observation shape. Plays the most likely allowed
    action (``deterministic=True``) or samples among the allowed ones with a generator seeded by
    :meth:`reset`.
    """

    def __init__(
        self,
        module: MaskedPPOTorchRLModule,
        trained_env: Mapping[str, Any] | None = None,
        deterministic: bool = True,
        seed: int | None = 0,
    ) -> None:
        self.module = module
        self.requirements = EnvRequirements.trained_on(trained_env or {}, shape=OBSERVATION_SETTINGS)
        self.deterministic = deterministic
        self.reset(seed)

    def reset(self, seed: int | None = None) -> None:
        self.generator = torch.Generator().manual_seed(0 if seed is None else int(seed))

    def act(self, observation: dict, agent: str) -> int:
        obs = {k: torch.as_tensor(np.asarray(v))[None] for k, v in observation.items()}
        with torch.no_grad():
            logits = self.module.forward_inference({Columns.OBS: obs})[Columns.ACTION_DIST_INPUTS][0]
        if self.deterministic:
            return int(torch.argmax(logits))
        return int(torch.multinomial(torch.softmax(logits, -1), 1, generator=self.generator))
