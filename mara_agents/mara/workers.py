"""Rollout workers: each worker runs several AEC env copies, one node turn per copy per request.

Workers are local processes (:class:`WorkerPool`, the default) or Ray actors on a local or remote Ray
cluster (:class:`RayWorkerPool`); both run the same :class:`CopyGroup` over the same seeds, so a
training run gives the same numbers on either. The learner batches the policy over all copies and
sends one action to each; a worker plays them,
resets a copy when its episode ends (next seed of the copy's own sequence), and answers for every
copy with what the learner needs for the next turn: the acting node's observation and mask, the
global state, the teacher's action for that turn (-1 without a teacher) and the planner it follows,
the reward of the turn, whether the episode ended, and the completion rate of an episode that ended
with what each of a ``best`` teacher's candidates completed of it and its scenario kind (a :class:`Turn`).
"""

from __future__ import annotations

import multiprocessing as mp
from collections.abc import Callable, Sequence
from typing import NamedTuple, TypeVar

import numpy as np

from mara_agents.mara.scenarios import (
    TRAINING_SEED_BASE,
    Padding,
    ScenarioSampler,
    scenario_kind,
    scenario_settings,
)
from mara_agents.mara.teacher import Teacher
from mara_agents.mara.warmup import learner_window, play_warmup
from mara_env.env import live_turns, raw_env

T = TypeVar("T")
R = TypeVar("R")


class Turn(NamedTuple):
    """What a worker answers for one env copy: the next live node's turn and how the last one went."""

    observation: np.ndarray
    mask: np.ndarray
    state: np.ndarray
    label: int  # the teacher's action at this turn (-1 without a teacher)
    path: int  # the planner a best teacher follows this episode (gate_paths.GATE_PATHS; -1 none)
    reward: float = 0.0  # of the turn just played (0 on the first observation)
    done: bool = False  # the turn just played ended the episode (this turn is the next episode's first)
    finished: float | None = None  # the ended episode's completion rate
    kind: int = 0  # the scenario kind of this turn's episode (scenarios.scenario_kind)
    candidates_finished: tuple[float, ...] | None = None  # each best-teacher candidate's rate on the ended episode
    finished_kind: int = 0  # the scenario kind of the ended episode
    nodes: int = 0  # the nodes of this turn's cluster (M before padding)
    cut_state: np.ndarray | None = None  # the (padded) state where the ended episode was cut (warmup.learner_window)


class EnvCopy:
    """One env copy with its seed sequence and, optionally, a teacher labelling its turns.

    With ``scenarios`` every episode plays a scenario drawn from its seed (a new env), and what the
    learner gets is padded to the largest scenario's sizes so every copy's turns stack into one batch.
    """

    def __init__(
        self, env_kwargs: dict, seeds: list[int], teacher: str | None, scenarios: ScenarioSampler | None = None
    ) -> None:
        self.base, self.seeds, self.teacher_name = env_kwargs, iter(seeds), teacher
        self.scenarios, self.padding = scenarios, Padding.for_scenarios(scenarios)
        self.env: raw_env | None = None
        self._reset()

    def _reset(self) -> None:
        seed = next(self.seeds)
        if self.env is None or self.scenarios is not None:  # a scenario per episode: a new env
            settings = self.env_settings = scenario_settings(self.base, self.scenarios, seed)
            self.env = raw_env(**settings)
            self.teacher = Teacher.for_env(self.teacher_name, settings) if self.teacher_name else None
            self.kind = scenario_kind(settings)
            self.nodes = len(self.env.possible_agents)  # M before padding
        self.env.reset(seed=seed)
        if self.teacher is not None:
            self.teacher.reset(seed)
        play_warmup(self.env, self.scenarios, self.env_settings, seed, self.teacher)  # a planner fills big clusters
        self.cut = learner_window(self.scenarios, self.env_settings, seed).cut

    def turn(self) -> Turn:
        """Skip finished agents' dead steps; the next live node's observation, mask, state and labels."""
        observation = self.env.observe(next(live_turns(self.env)))
        label = self.teacher.action(self.env, observation) if self.teacher is not None else -1
        path = self.teacher.path() if self.teacher is not None else -1
        state = self.env.state()
        if self.padding is not None:
            observation, state = self.padding.observation(observation), self.padding.state(state)
        return Turn(
            observation["observation"], observation["action_mask"], state, label, path, kind=self.kind, nodes=self.nodes
        )

    def step(self, action: int) -> Turn:
        env = self.env
        agent = env.agent_selection
        env.step(int(action))
        reward = float(env.rewards[agent])
        done = bool(env.terminations[agent] or env.truncations[agent])
        if not done and self.cut is not None and env.sim.slot >= self.cut:
            return self._cut(reward)
        if not done:
            return self.turn()._replace(reward=reward)
        ended = {
            "finished": env.sim.metrics()["completion_rate"],
            "candidates_finished": None if self.teacher is None else self.teacher.episode_rates,
            "finished_kind": self.kind,
        }
        self._reset()
        return self.turn()._replace(reward=reward, done=True, **ended)

    def _cut(self, reward: float) -> Turn:
        """End the episode at the learner window's cut: the state there goes back for the critic to value
        (no completion rate: the episode is not over)."""
        state = self.env.state()
        if self.padding is not None:
            state = self.padding.state(state)
        self._reset()
        return self.turn()._replace(reward=reward, done=True, cut_state=state)


class CopyGroup:
    """The env copies one worker runs (a process or a Ray actor)."""

    def __init__(
        self, env_kwargs: dict, seed_lists: list[list[int]], teacher: str | None, scenarios: ScenarioSampler | None
    ) -> None:
        self.copies = [EnvCopy(env_kwargs, seeds, teacher, scenarios) for seeds in seed_lists]

    def observe(self) -> list[Turn]:
        return [c.turn() for c in self.copies]

    def step(self, actions: list[int]) -> list[Turn]:
        return [c.step(a) for c, a in zip(self.copies, actions)]


def map_forked(function: Callable[[T], R], items: Sequence[T], jobs: int, **bar) -> list[R]:
    """``[function(item) for item in items]`` in ``jobs`` forked processes on one torch thread each
    (in this process when ``jobs`` is 1), in order, with a tqdm bar (``bar``: its keywords)."""
    from concurrent.futures import ProcessPoolExecutor

    from tqdm.auto import tqdm

    bar = {"total": len(items), **bar}
    if jobs == 1:
        return [function(item) for item in tqdm(items, **bar)]
    # forked on one torch thread each (a fork of a process that ran torch's thread pool hangs otherwise)
    context = mp.get_context("fork" if "fork" in mp.get_all_start_methods() else None)
    with ProcessPoolExecutor(max_workers=jobs, mp_context=context, initializer=one_torch_thread) as pool:
        return list(tqdm(pool.map(function, items), **bar))


def one_torch_thread() -> None:
    """Start a forked worker process on one torch thread (the worker is our own process: its entry point).

    A child forked after its parent ran torch's thread pool hangs at its first multi-threaded torch
    op (a 256 x 256 product, the QR of an orthogonal initialisation). Planner teachers never ran one
    in a worker; a teacher candidate that builds a MARA network does. One thread per worker is also
    what the cores allow: the workers share them.
    """
    import torch

    torch.set_num_threads(1)


def worker_loop(
    connection,
    env_kwargs: dict,
    seed_lists: list[list[int]],
    teacher: str | None,
    scenarios: ScenarioSampler | None,
    inherited: Sequence = (),
) -> None:
    """Serve one share of env copies until told to close, or until the trainer's end of ``connection``
    is gone (a killed trainer: the worker exits rather than wait forever). ``inherited`` are the trainer's
    ends of the pipes that a fork copied into this process; they are closed first, else this worker
    would hold its own pipe open."""
    for end in inherited:
        end.close()
    one_torch_thread()
    group = CopyGroup(env_kwargs, seed_lists, teacher, scenarios)
    while True:
        try:
            command, payload = connection.recv()
        except EOFError:
            return
        if command == "close":
            connection.close()
            return
        connection.send(group.observe() if command == "observe" else group.step(payload))


def copy_seeds(count: int, seed: int, episodes_per_copy: int, scenarios: bool = False) -> list[list[int]]:
    """Episode seeds of every copy: copy ``i`` plays ``seed * 1_000_003 + i * episodes_per_copy + 0, 1, ...``,
    from :data:`~mara_agents.mara.scenarios.TRAINING_SEED_BASE` up when training on scenarios (seeds no
    evaluation plays; the single-scenario default keeps the seeds the shipped policy was trained on)."""
    base = seed * 1_000_003 + (TRAINING_SEED_BASE if scenarios else 0)
    return [list(range(base + i * episodes_per_copy, base + (i + 1) * episodes_per_copy)) for i in range(count)]


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
        scenarios: ScenarioSampler | None = None,
    ) -> None:
        processes = min(count, processes or count)
        context = mp.get_context("fork") if "fork" in mp.get_all_start_methods() else mp.get_context()
        seeds = copy_seeds(count, seed, episodes_per_copy, scenarios is not None)
        self.shares = np.array_split(np.arange(count), processes)
        self.connections, self.processes = [], []
        for share in self.shares:
            parent, child = context.Pipe()
            args = (child, env_kwargs, [seeds[i] for i in share], teacher, scenarios, [*self.connections, parent])
            process = context.Process(target=worker_loop, args=args, daemon=True)
            process.start()
            child.close()  # the worker's end lives in the worker only: its death is an EOFError here
            self.connections.append(parent)
            self.processes.append(process)

    def observe(self) -> list[Turn]:
        for c in self.connections:
            c.send(("observe", None))
        return [turn for c in self.connections for turn in c.recv()]

    def step(self, actions: np.ndarray) -> list[Turn]:
        for c, share in zip(self.connections, self.shares):
            c.send(("step", actions[share].tolist()))
        return [turn for c in self.connections for turn in c.recv()]

    def close(self) -> None:
        for c in self.connections:
            c.send(("close", None))
        for p in self.processes:
            p.join(timeout=5)


class RayWorkerPool:
    """The same env copies as :class:`WorkerPool`, run by Ray actors (one per share of copies).

    Parameters
    ----------
    address:
        ``"local"`` starts a Ray instance here with ``processes`` CPUs; otherwise the address of a
        running Ray cluster (``ray start --head`` prints it), as ``ray.init(address=...)`` takes it.
        Either way the actors import ``mara_env`` and ``mara_agents``, so the cluster's nodes need the
        package installed.
    """

    def __init__(
        self,
        count: int,
        env_kwargs: dict,
        seed: int,
        processes: int | None = None,
        teacher: str | None = None,
        episodes_per_copy: int = 100_000,
        scenarios: ScenarioSampler | None = None,
        address: str = "local",
    ) -> None:
        import ray

        processes = min(count, processes or count)
        self._started = not ray.is_initialized()
        if self._started:
            local = address == "local"
            ray.init(
                address=None if local else address,
                num_cpus=processes if local else None,
                include_dashboard=False,
                log_to_driver=False,
                configure_logging=False,
            )
        seeds = copy_seeds(count, seed, episodes_per_copy, scenarios is not None)
        self.shares = np.array_split(np.arange(count), processes)
        actor = ray.remote(num_cpus=1)(CopyGroup)
        self.actors = [actor.remote(env_kwargs, [seeds[i] for i in share], teacher, scenarios) for share in self.shares]
        self._ray = ray

    def observe(self) -> list[Turn]:
        groups = self._ray.get([a.observe.remote() for a in self.actors])
        return [turn for group in groups for turn in group]

    def step(self, actions: np.ndarray) -> list[Turn]:
        refs = [a.step.remote(actions[share].tolist()) for a, share in zip(self.actors, self.shares)]
        return [turn for group in self._ray.get(refs) for turn in group]

    def close(self) -> None:
        for actor in self.actors:
            self._ray.kill(actor)
        if self._started:
            self._ray.shutdown()
