"""The evaluation runner: play seeded episodes of any scheduler on any env config."""

from __future__ import annotations

import time
from collections.abc import Iterable

from tqdm.auto import tqdm

from mara_agents.base import Scheduler
from mara_agents.registry import make
from mara_env.env import live_turns, raw_env


def play_episode(env: raw_env, scheduler: Scheduler, seed: int) -> dict:
    """One episode of ``scheduler`` on ``env`` (reset with ``seed``); returns its record."""
    start = time.perf_counter()
    env.reset(seed=seed)
    scheduler.reset(seed)
    team_return = 0.0
    for agent in live_turns(env):
        env.step(scheduler.act(env.observe(agent), agent))
        # Rewards are 0 except after a slot's last node, when every node gets the team reward.
        team_return += env.rewards[agent]
    record = {"seed": int(seed), **env.sim.metrics(), "return": team_return}
    record["wall_seconds"] = time.perf_counter() - start
    return record


def env_config(scheduler: Scheduler, env_kwargs: dict) -> dict:
    """``env_kwargs`` with test curves by default and what the scheduler needs.

    A scheduler's ``default_env_kwargs`` apply unless given (schedulers that never read the forecast
    features run with ``forecaster="none"``, which changes nothing they see and saves time); its
    ``env_kwargs`` are required: a scheduler that reads forecast features names its forecaster, e.g.
    ``{"forecaster": "oracle"}``, and asking for a different one is an error, not a silently wrong run.
    """
    config = {"curve_split": "test", **getattr(scheduler, "default_env_kwargs", {}), **env_kwargs}
    for key, value in getattr(scheduler, "env_kwargs", {}).items():
        if key in env_kwargs and env_kwargs[key] != value:
            raise ValueError(f"{type(scheduler).__name__} needs {key}={value!r}, got {key}={env_kwargs[key]!r}")
        config[key] = value
    return config


def evaluate(agent: Scheduler | str, seeds: Iterable[int], progress: bool = False, **env_kwargs) -> list[dict]:
    """Play one episode per seed and return one record per episode.

    Parameters
    ----------
    agent:
        A scheduler, or a registered name (``mara_agents.make(agent)``).
    seeds:
        Episode seeds; each seeds both the env and the scheduler.
    progress:
        Show a progress bar.
    **env_kwargs:
        Keyword arguments of ``mara_env.raw_env`` (``num_nodes``, ``load``, ...). ``curve_split``
        defaults to ``"test"`` here: evaluations use curves no forecaster or policy was fitted on.

    Returns
    -------
    list of dict
        Per episode: ``seed``, ``completion_rate``, ``completed``, ``arrived``, ``expired``,
        ``wasted_work``, ``utilisation``, ``switches_per_task``, ``mean_failure_shortfall``,
        ``return`` (the team return, shaped if ``shaping=True``) and ``wall_seconds``.
    """
    scheduler = make(agent) if isinstance(agent, str) else agent
    env = raw_env(**env_config(scheduler, env_kwargs))
    seeds = list(seeds)
    label = agent if isinstance(agent, str) else type(agent).__name__
    return [play_episode(env, scheduler, s) for s in tqdm(seeds, desc=label, disable=not progress, leave=False)]
