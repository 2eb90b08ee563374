"""Stable-Baselines3 policies as schedulers, and their safe save/load.

``SB3Scheduler(model)`` acts with any SB3 (or sb3-contrib) policy over a ``Discrete(K_max + 1)``
action, trained on a flat observation vector (``mara_env.node_turns.NodeTurnEnv``, or a SuperSuit
vector env of the parallel env). It takes the policy's action probabilities, zeroes the masked
actions, and plays the most likely allowed one (or samples among them), so it never plays a masked
action even if the policy was trained without masks.

SB3's own ``model.save``/``load`` pickle Python objects; ``save_policy``/``load_policy`` store only
the policy's tensors and plain numbers and load them with ``torch.load(weights_only=True)``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from mara_agents.base import EnvRequirements

FORMAT = "mara-sb3-policy-v1"
ALGORITHMS = ("PPO", "A2C", "MaskablePPO")
# Env settings that shape the observation vector (a policy only fits the observation it learned on).
OBSERVATION_SETTINGS = ("max_tasks", "history_window")


def _algorithm(name: str):
    if name not in ALGORITHMS:
        raise ValueError(f"algorithm must be one of {ALGORITHMS}, got {name!r}")
    if name == "MaskablePPO":
        from sb3_contrib import MaskablePPO

        return MaskablePPO
    import stable_baselines3

    return getattr(stable_baselines3, name)


class SB3Scheduler:
    """A trained SB3 policy as a ``Scheduler``.

    Parameters
    ----------
    model:
        A trained SB3 model whose observation is the env's flat ``"observation"`` vector.
    deterministic:
        Play the most likely allowed action (default) or sample among the allowed ones.
    trained_env:
        The env settings the policy was trained on (``NodeTurnEnv(**trained_env)``): the runner then
        builds the same observation (forecaster, ``max_tasks``, ``history_window``). ``None``: the env's
        defaults.
    """

    def __init__(
        self,
        model: Any,
        deterministic: bool = True,
        seed: int | None = 0,
        trained_env: dict | None = None,
    ) -> None:
        self.model = model
        self.requirements = EnvRequirements.trained_on(trained_env or {}, shape=OBSERVATION_SETTINGS)
        self.deterministic = deterministic
        self.reset(seed)

    def reset(self, seed: int | None = None) -> None:
        self.rng = np.random.default_rng(seed)

    def probabilities(self, vector: np.ndarray) -> np.ndarray:
        """The policy's action probabilities for one observation vector."""
        import torch

        policy = self.model.policy
        with torch.no_grad():
            obs, _ = policy.obs_to_tensor(vector)
            return policy.get_distribution(obs).distribution.probs[0].cpu().numpy().astype(np.float64)

    def act(self, observation: dict, agent: str) -> int:
        mask = np.asarray(observation["action_mask"]) > 0
        probs = np.where(mask, self.probabilities(np.asarray(observation["observation"])), 0.0)
        if probs.sum() <= 0.0:
            return 0
        if self.deterministic:
            return int(np.argmax(probs))
        return int(self.rng.choice(probs.size, p=probs / probs.sum()))


def save_policy(model: Any, path: str | Path, env_kwargs: dict) -> Path:
    """Store the policy's tensors, its algorithm and the env settings it was trained on."""
    import torch

    name = type(model).__name__
    if name not in ALGORITHMS:
        raise ValueError(f"can save models of {ALGORITHMS}, got {name}")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    net_arch = model.policy.net_arch
    torch.save(
        {
            "format": FORMAT,
            "algorithm": name,
            "env_kwargs": env_kwargs,
            "net_arch": net_arch,
            "state_dict": model.policy.state_dict(),
        },
        path,
    )
    return path


def load_policy(path: str | Path, deterministic: bool = True) -> SB3Scheduler:
    """Rebuild a saved policy as a scheduler; ``ValueError`` for a missing, corrupt or foreign file."""
    from mara_env.node_turns import NodeTurnEnv
    from mara_env.safe_load import load_tensor_file

    blob = load_tensor_file(path, FORMAT, "policy file")
    algorithm = _algorithm(blob["algorithm"])
    env = NodeTurnEnv(**blob["env_kwargs"])
    model = algorithm("MlpPolicy", env, policy_kwargs={"net_arch": blob["net_arch"]}, device="cpu")
    try:
        model.policy.load_state_dict(blob["state_dict"])
    except (RuntimeError, KeyError) as err:
        raise ValueError(f"policy file {path} does not match its network: {err}") from err
    # The observation it was trained on: the runner must build the same one.
    return SB3Scheduler(model, deterministic=deterministic, trained_env=blob["env_kwargs"])
