"""Rollout workers: each process runs one AEC env copy, one node turn per request.

The learner batches the policy over all copies and sends one action to each; a worker plays it,
resets its env when the episode ends (next seed of its own sequence), and answers with what the
learner needs for the next turn: the acting node's observation and mask, the global state, the
reward of the turn, whether the episode ended, and the completion rate of an episode that ended.
"""

from __future__ import annotations

import multiprocessing as mp
from typing import Any

import numpy as np

from mara_env.env import live_turns, raw_env


def _turn(env: raw_env) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Skip finished agents' dead steps; the next live node's observation, mask and the state."""
    obs = env.observe(next(live_turns(env)))
    return obs["observation"], obs["action_mask"], env.state()


def worker_loop(connection, env_kwargs: dict, seeds: list[int]) -> None:
    env = raw_env(**env_kwargs)
    seed_iter = iter(seeds)
    env.reset(seed=next(seed_iter))
    while True:
        command, payload = connection.recv()
        if command == "close":
            connection.close()
            return
        if command == "observe":
            connection.send((*_turn(env), 0.0, False, None))
            continue
        agent = env.agent_selection
        env.step(int(payload))
        reward = float(env.rewards[agent])
        done = bool(env.terminations[agent] or env.truncations[agent])
        finished = None
        if done:
            finished = env.sim.metrics()["completion_rate"]
            env.reset(seed=next(seed_iter))
        connection.send((*_turn(env), reward, done, finished))


class WorkerPool:
    """``count`` env copies in their own processes (``fork`` where available)."""

    def __init__(self, count: int, env_kwargs: dict, seed: int, episodes_per_worker: int = 100_000) -> None:
        context = mp.get_context("fork") if "fork" in mp.get_all_start_methods() else mp.get_context()
        self.connections, self.processes = [], []
        for i in range(count):
            parent, child = context.Pipe()
            seeds = list(
                range(seed * 1_000_003 + i * episodes_per_worker, seed * 1_000_003 + (i + 1) * episodes_per_worker)
            )
            process = context.Process(target=worker_loop, args=(child, env_kwargs, seeds), daemon=True)
            process.start()
            self.connections.append(parent)
            self.processes.append(process)

    def observe(self) -> list[tuple[Any, ...]]:
        for c in self.connections:
            c.send(("observe", None))
        return [c.recv() for c in self.connections]

    def step(self, actions: np.ndarray) -> list[tuple[Any, ...]]:
        for c, a in zip(self.connections, actions.tolist()):
            c.send(("step", a))
        return [c.recv() for c in self.connections]

    def close(self) -> None:
        for c in self.connections:
            c.send(("close", None))
        for p in self.processes:
            p.join(timeout=5)
