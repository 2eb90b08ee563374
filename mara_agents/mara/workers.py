"""Rollout workers: each process runs several AEC env copies, one node turn per copy per request.

The learner batches the policy over all copies and sends one action to each; a worker plays them,
resets a copy when its episode ends (next seed of the copy's own sequence), and answers for every
copy with what the learner needs for the next turn: the acting node's observation and mask, the
global state, the teacher's action for that turn (-1 without a teacher), the reward of the turn,
whether the episode ended, and the completion rate of an episode that ended.
"""

from __future__ import annotations

import multiprocessing as mp
from typing import Any

import numpy as np

from mara_agents.mara.teacher import Teacher
from mara_env.env import live_turns, raw_env


class EnvCopy:
    """One env copy with its seed sequence and, optionally, a teacher labelling its turns."""

    def __init__(self, env_kwargs: dict, seeds: list[int], teacher: str | None) -> None:
        self.env = raw_env(**env_kwargs)
        self.seeds = iter(seeds)
        self.teacher = Teacher.for_env(teacher, env_kwargs) if teacher else None
        self._reset()

    def _reset(self) -> None:
        seed = next(self.seeds)
        self.env.reset(seed=seed)
        if self.teacher is not None:
            self.teacher.reset(seed)

    def turn(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
        """Skip finished agents' dead steps; the next live node's observation, mask, state and label."""
        observation = self.env.observe(next(live_turns(self.env)))
        label = self.teacher.action(self.env, observation) if self.teacher is not None else -1
        return observation["observation"], observation["action_mask"], self.env.state(), label

    def step(self, action: int) -> tuple[Any, ...]:
        env = self.env
        agent = env.agent_selection
        env.step(int(action))
        reward = float(env.rewards[agent])
        done = bool(env.terminations[agent] or env.truncations[agent])
        finished = None
        if done:
            finished = env.sim.metrics()["completion_rate"]
            self._reset()
        return (*self.turn(), reward, done, finished)


def worker_loop(connection, env_kwargs: dict, seed_lists: list[list[int]], teacher: str | None) -> None:
    copies = [EnvCopy(env_kwargs, seeds, teacher) for seeds in seed_lists]
    while True:
        command, payload = connection.recv()
        if command == "close":
            connection.close()
            return
        if command == "observe":
            connection.send([(*c.turn(), 0.0, False, None) for c in copies])
        else:
            connection.send([c.step(a) for c, a in zip(copies, payload)])


class WorkerPool:
    """``count`` env copies spread over ``processes`` processes (``fork`` where available).

    Parameters
    ----------
    count:
        Env copies in all; copy ``i`` plays seeds ``seed * 1_000_003 + i * episodes_per_copy + 0, 1, ...``.
    teacher:
        Name of a :class:`~mara_agents.mara.teacher.Teacher` labelling every turn, or ``None``.
    """

    def __init__(
        self,
        count: int,
        env_kwargs: dict,
        seed: int,
        processes: int | None = None,
        teacher: str | None = None,
        episodes_per_copy: int = 100_000,
    ) -> None:
        processes = min(count, processes or count)
        context = mp.get_context("fork") if "fork" in mp.get_all_start_methods() else mp.get_context()
        base = seed * 1_000_003
        seeds = [list(range(base + i * episodes_per_copy, base + (i + 1) * episodes_per_copy)) for i in range(count)]
        self.shares = np.array_split(np.arange(count), processes)
        self.connections, self.processes = [], []
        for share in self.shares:
            parent, child = context.Pipe()
            args = (child, env_kwargs, [seeds[i] for i in share], teacher)
            process = context.Process(target=worker_loop, args=args, daemon=True)
            process.start()
            self.connections.append(parent)
            self.processes.append(process)

    def observe(self) -> list[tuple[Any, ...]]:
        for c in self.connections:
            c.send(("observe", None))
        return [turn for c in self.connections for turn in c.recv()]

    def step(self, actions: np.ndarray) -> list[tuple[Any, ...]]:
        for c, share in zip(self.connections, self.shares):
            c.send(("step", actions[share].tolist()))
        return [turn for c in self.connections for turn in c.recv()]

    def close(self) -> None:
        for c in self.connections:
            c.send(("close", None))
        for p in self.processes:
            p.join(timeout=5)
