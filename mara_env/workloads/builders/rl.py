"""The ``rl`` bank: learning curves of real reinforcement-learning training (Stable-Baselines3).

PPO, A2C and DQN (DQN for discrete actions only) train small MLP policies on Gymnasium
classic-control tasks (CartPole-v1, Acrobot-v1, Pendulum-v1) on one CPU thread. The curve's x-axis is
the number of environment steps taken (summed over the vectorised copies); its loss is the normalised
regret of the training return (see :data:`LOSS` and :data:`RETURN_RANGE`).

MountainCar-v0 and MountainCarContinuous-v0 are left out: within the ~30k-step budget per curve
(probed with PPO, A2C and DQN) MountainCar-v0 stays at the -200 floor, and MountainCarContinuous-v0
only drifts into the "stand still" local optimum (return about 0) without ever reaching the goal.
"""

from __future__ import annotations

from collections import deque
from itertools import product

import numpy as np

from mara_env.torch_threads import torch_threads

#: Fixed return range per environment: ``(R_min, R_max)``. CartPole-v1: an episode lasts at most
#: 500 steps at +1 each. Acrobot-v1: -1 per step until the goal, truncated at 500 steps. Pendulum-v1:
#: 200 steps of cost <= 16.3; a random policy scores about -1200 to -1500, a good one -150 to -200.
RETURN_RANGE: dict[str, tuple[float, float]] = {
    "CartPole-v1": (0.0, 500.0),
    "Acrobot-v1": (-500.0, 0.0),
    "Pendulum-v1": (-1600.0, 0.0),
}
#: Loss floor: a perfect return gives this loss, so losses stay > 0.
LOSS_FLOOR = 0.01
#: Completed training episodes averaged into the return R at each observation point.
EPISODE_WINDOW = 5

LOSS = (
    "rl: 0.01 + 0.99 * regret, regret = clip(1 - (R - R_min) / (R_max - R_min), 0, 1), with R the mean "
    "undiscounted return of the last 5 completed training episodes (behaviour policy, exploration "
    "included), observed every `every` env steps, the point at step 0 being 5 episodes of the untrained "
    "policy; (R_min, R_max) = CartPole-v1 (0, 500), Acrobot-v1 (-500, 0), Pendulum-v1 (-1600, 0)."
)

# Per environment: total env steps and observation interval (env steps, summed over vectorised copies).
_BUDGET = {
    "CartPole-v1": {"total_timesteps": 30_000, "every": 500},
    "Acrobot-v1": {"total_timesteps": 24_000, "every": 400},
    "Pendulum-v1": {"total_timesteps": 36_000, "every": 600},
}
_N_ENVS = 4  # vectorised env copies for PPO/A2C (DQN uses one)

# (env, algorithm) -> ordered grid axes; every combination is run with each seed in _SEEDS.
_AXES: dict[tuple[str, str], dict[str, list]] = {
    ("CartPole-v1", "ppo"): {"lr": [1e-4, 3e-4, 1e-3], "n_steps": [16, 256], "width": [16, 64]},
    ("CartPole-v1", "a2c"): {"lr": [3e-4, 1e-3, 3e-3, 1e-2], "n_steps": [5, 32]},
    ("CartPole-v1", "dqn"): {"lr": [1e-4, 5e-4, 2e-3], "target_update": [250, 2000]},
    ("Acrobot-v1", "ppo"): {"lr": [3e-4, 1e-3, 3e-3], "n_steps": [64, 256]},
    ("Acrobot-v1", "a2c"): {"lr": [7e-4, 3e-3], "n_steps": [5, 32]},
    ("Acrobot-v1", "dqn"): {"lr": [3e-4, 1e-3], "buffer": [5_000, 50_000]},
    ("Pendulum-v1", "ppo"): {"lr": [3e-4, 1e-3, 3e-3], "gamma": [0.9, 0.98], "n_steps": [256, 1024]},
    ("Pendulum-v1", "a2c"): {"lr": [1e-3, 7e-3], "gamma": [0.9, 0.98]},
}
_SEEDS = (0, 1, 2)
_DEFAULTS = {"width": 64, "gamma": 0.99}
_ALGO_DEFAULTS = {"ppo": {"n_steps": 256}, "a2c": {"n_steps": 8}, "dqn": {"buffer": 50_000, "target_update": 500}}


def _key(env_id: str, algorithm: str, axes: dict, seed: int) -> str:
    """A stable, readable key such as ``rl/Acrobot-v1/dqn/lr=0.001/buffer=5000/seed=2``."""
    parts = "/".join(f"{name}={value}" for name, value in axes.items())
    return f"rl/{env_id}/{algorithm}/{parts}/seed={seed}"


def _config(env_id: str, algorithm: str, axes: dict, seed: int, budget: dict) -> dict:
    config = {"key": _key(env_id, algorithm, axes, seed), "family": env_id, "algorithm": algorithm, "seed": seed}
    config.update(_DEFAULTS)
    config.update(_ALGO_DEFAULTS[algorithm])
    config.update(axes)
    config.update(budget)
    config["n_envs"] = 1 if algorithm == "dqn" else _N_ENVS
    return config


def grid(size: str) -> list[dict]:
    """The run configurations: the full grid (168 runs), or two tiny ones (400 env steps each) for CI."""
    if size == "tiny":
        tiny = {"total_timesteps": 400, "every": 200}
        return [
            _config("CartPole-v1", "ppo", {"lr": 1e-3, "n_steps": 16, "width": 16}, 0, tiny),
            _config("Pendulum-v1", "a2c", {"lr": 1e-3, "gamma": 0.9}, 0, tiny),
        ]
    if size != "full":
        raise ValueError(f"size must be 'full' or 'tiny', got {size!r}")
    configs = []
    for (env_id, algorithm), axes in _AXES.items():
        for values in product(*axes.values()):
            for seed in _SEEDS:
                chosen = dict(zip(axes, values))
                configs.append(_config(env_id, algorithm, chosen, seed, _BUDGET[env_id]))
    return configs


def loss_of_return(env_id: str, ret: float) -> float:
    """``LOSS_FLOOR + (1 - LOSS_FLOOR) * regret`` of return ``ret`` in environment ``env_id``."""
    r_min, r_max = RETURN_RANGE[env_id]
    regret = float(np.clip(1.0 - (ret - r_min) / (r_max - r_min), 0.0, 1.0))
    return LOSS_FLOOR + (1.0 - LOSS_FLOOR) * regret


def _model(config: dict, env):
    """A fresh SB3 model for ``config`` on vectorised env ``env``."""
    from stable_baselines3 import A2C, DQN, PPO

    common = {
        "learning_rate": config["lr"],
        "gamma": config["gamma"],
        "policy_kwargs": {"net_arch": [config["width"]] * 2},
        "seed": config["seed"],
        "device": "cpu",
        "verbose": 0,
    }
    algorithm = config["algorithm"]
    if algorithm == "ppo":
        batch = min(64, config["n_steps"] * config["n_envs"])
        return PPO("MlpPolicy", env, n_steps=config["n_steps"], batch_size=batch, **common)
    if algorithm == "a2c":
        return A2C("MlpPolicy", env, n_steps=config["n_steps"], **common)
    if algorithm == "dqn":
        return DQN(
            "MlpPolicy",
            env,
            buffer_size=config["buffer"],
            learning_starts=1_000,
            batch_size=64,
            train_freq=4,
            target_update_interval=config["target_update"],
            exploration_fraction=0.2,
            exploration_final_eps=0.05,
            **common,
        )
    raise ValueError(f"unknown algorithm {algorithm!r}")


def _initial_returns(model, env_id: str, n_episodes: int, seed: int) -> list[float]:
    """Returns of ``n_episodes`` episodes of the untrained behaviour policy (one vectorised batch)."""
    from stable_baselines3.common.env_util import make_vec_env

    env = make_vec_env(env_id, n_envs=n_episodes, seed=seed)
    if hasattr(model, "exploration_initial_eps"):  # DQN: start as training starts, fully random
        model.exploration_rate = model.exploration_initial_eps
    obs, totals = env.reset(), np.zeros(n_episodes)
    returns: list[float | None] = [None] * n_episodes
    while any(r is None for r in returns):
        actions, _ = model.predict(obs, deterministic=False)
        obs, rewards, dones, _ = env.step(actions)
        totals += rewards
        for i in np.flatnonzero(dones):
            if returns[i] is None:
                returns[i] = float(totals[i])
        totals[dones] = 0.0
    env.close()
    return returns


def _recorder(window: deque, every: int, total: int):
    """An SB3 callback appending ``(env_step, mean of window)`` every ``every`` env steps up to ``total``."""
    from stable_baselines3.common.callbacks import BaseCallback

    class Recorder(BaseCallback):
        def __init__(self) -> None:
            super().__init__()
            self.points: list[tuple[int, float]] = []

        def _on_step(self) -> bool:
            for info in self.locals["infos"]:
                if "episode" in info:
                    window.append(float(info["episode"]["r"]))
            if self.num_timesteps % every == 0 and self.num_timesteps <= total:
                self.points.append((self.num_timesteps, float(np.mean(window))))
            return True

    return Recorder()


def run(config: dict) -> dict:
    """Train once on one torch thread (restored after); the loss curve of the training return, observed
    every ``config['every']`` env steps."""
    with torch_threads(1):
        return _train(config)


def _train(config: dict) -> dict:
    from stable_baselines3.common.env_util import make_vec_env

    env_id, seed, every = config["family"], int(config["seed"]), int(config["every"])
    if every % config["n_envs"]:
        raise ValueError(f"{config['key']}: every={every} must be a multiple of n_envs={config['n_envs']}")
    env = make_vec_env(env_id, n_envs=config["n_envs"], seed=seed)
    model = _model(config, env)
    window = deque(_initial_returns(model, env_id, EPISODE_WINDOW, seed + 10_000), maxlen=EPISODE_WINDOW)
    recorder = _recorder(window, every, int(config["total_timesteps"]))
    recorder.points.append((0, float(np.mean(window))))
    model.learn(total_timesteps=config["total_timesteps"], callback=recorder)
    env.close()
    steps = np.array([s for s, _ in recorder.points], dtype=float)
    losses = np.array([loss_of_return(env_id, r) for _, r in recorder.points])
    return {"steps": steps, "losses": losses, "x_unit": "env_step"}
