"""AEC node-turns per second of the environment beside a trivial AEC env with the same spaces.

The trivial env (the PettingZoo API floor) does no simulation: it returns a constant observation and
mask, cycles its agents and ends after the same number of slots. Both run behind PettingZoo's
order-enforcing wrapper and are driven by the same loop (``agent_iter`` + ``last`` + masked random
action + ``step``), one process.

    python benchmarks/env_speed.py --num-nodes 8 --max-tasks 32 --episodes 5
"""

from __future__ import annotations

import argparse
import platform
import time

import numpy as np
from pettingzoo import AECEnv
from pettingzoo.utils import wrappers

import mara_env


class TrivialAEC(AECEnv):
    """Same agents and spaces as the mara env; no dynamics."""

    metadata = {"name": "trivial_floor_v0", "is_parallelizable": True}

    def __init__(self, template: mara_env.raw_env) -> None:
        super().__init__()
        self.possible_agents = template.possible_agents[:]
        self.observation_spaces = template.observation_spaces
        self.action_spaces = template.action_spaces
        self.horizon = template.sim_config.horizon
        size = template.layout.size
        self._obs = np.linspace(0.0, 1.0, size, dtype=np.float32)
        self._mask = np.ones(template.layout.max_tasks + 1, dtype=np.int8)

    def observation_space(self, agent):
        return self.observation_spaces[agent]

    def action_space(self, agent):
        return self.action_spaces[agent]

    def reset(self, seed=None, options=None):
        self.agents = self.possible_agents[:]
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self.infos = {a: {} for a in self.agents}
        self._turn, self._slot = 0, 0
        self.agent_selection = self.agents[0]

    def observe(self, agent):
        return {"observation": self._obs.copy(), "action_mask": self._mask.copy()}

    def step(self, action):
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        self._cumulative_rewards[agent] = 0.0
        if self._turn == len(self.agents) - 1:
            self._slot += 1
            done = self._slot >= self.horizon
            for a in self.agents:
                self.rewards[a] = 1.0
                self.terminations[a] = done
            self._turn = 0
        else:
            self._clear_rewards()
            self._turn += 1
        self.agent_selection = self.agents[self._turn]
        self._accumulate_rewards()


def turns_per_second(env: AECEnv, episodes: int, seed: int) -> tuple[float, int]:
    rng = np.random.default_rng(seed)
    turns, start = 0, time.perf_counter()
    for episode in range(episodes):
        env.reset(seed=seed + episode)
        for _agent in env.agent_iter():
            obs, reward, terminated, truncated, info = env.last()
            if terminated or truncated:
                action = None
            else:
                allowed = np.flatnonzero(obs["action_mask"])
                action = int(allowed[rng.integers(allowed.size)])
                turns += 1
            env.step(action)
    return turns / (time.perf_counter() - start), turns


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--num-nodes", type=int, default=8)
    parser.add_argument("--max-tasks", type=int, default=32)
    parser.add_argument("--horizon", type=int, default=300)
    parser.add_argument("--episodes", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--forecaster", default="none", help="none, wls, dkf, flow or oracle")
    args = parser.parse_args()
    kwargs = {
        "num_nodes": args.num_nodes,
        "max_tasks": args.max_tasks,
        "horizon": args.horizon,
        "forecaster": args.forecaster,
    }
    if args.forecaster == "flow":  # one core: keep torch's intra-op pool to one thread
        import torch

        torch.set_num_threads(1)
    mara = mara_env.env(**kwargs)
    floor = wrappers.OrderEnforcingWrapper(TrivialAEC(mara_env.raw_env(**{**kwargs, "forecaster": "none"})))
    turns_per_second(mara, 1, args.seed)  # warm-up: workload statistics, imports
    mara_rate, turns = turns_per_second(mara, args.episodes, args.seed)
    floor_rate, _ = turns_per_second(floor, args.episodes, args.seed)
    print(f"python {platform.python_version()}, numpy {np.__version__}, {platform.processor() or platform.machine()}")
    print(f"config: {kwargs}, {args.episodes} episodes, {turns} node-turns")
    print(f"mara env      : {mara_rate:>10,.0f} node-turns/s")
    print(f"trivial floor : {floor_rate:>10,.0f} node-turns/s")
    print(f"ratio floor/mara: {floor_rate / mara_rate:.2f}x")


if __name__ == "__main__":
    main()
