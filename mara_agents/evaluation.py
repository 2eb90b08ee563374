"""The evaluation runner: play seeded episodes of any scheduler on any env config."""

from __future__ import annotations

import time
from collections.abc import Iterable

from tqdm.auto import tqdm

from mara_agents.base import Scheduler, requirements_of
from mara_agents.registry import load_agent
from mara_env.config import DEFAULTS
from mara_env.core.upper_bound import env_upper_bound
from mara_env.env import live_turns, raw_env


def play_episode(env: raw_env, scheduler: Scheduler, seed: int) -> dict:
    """One episode of ``scheduler`` on ``env`` (reset with ``seed``); returns its record.

    The record holds the env's final metrics (those of ``info["metrics"]``: the simulator's, plus
    ``invalid_actions``, actions the env played as idle because they were masked or malformed, 0 for
    a correct scheduler, and ``trace_rows_dropped``), the team ``return``, ``wall_seconds`` and
    ``upper_bound`` and ``upper_bound_rate`` (per arrived task):
    the LP ceiling on the episode's completions (:func:`mara_env.core.upper_bound.env_upper_bound`).
    """
    start = time.perf_counter()
    env.reset(seed=seed)
    scheduler.reset(seed)
    team_return = 0.0
    for agent in live_turns(env):
        env.step(scheduler.act(env.observe(agent), agent))
        # Rewards are 0 except after a slot's last node, when every node gets the team reward.
        team_return += env.rewards[agent]
    record = {"seed": int(seed), **env.metrics(), "return": team_return}
    record["wall_seconds"] = time.perf_counter() - start
    # The LP ceiling on this episode's completions (same tasks and faults whatever was played).
    record["upper_bound"] = env_upper_bound(env).completions
    record["upper_bound_rate"] = record["upper_bound"] / record["arrived"] if record["arrived"] else 0.0
    return record


def env_config(scheduler: object, env_kwargs: dict) -> dict:
    """The ``raw_env`` keywords to play ``scheduler`` with: ``env_kwargs``, test curves by default, and
    what the scheduler's :class:`~mara_agents.base.EnvRequirements` ask for.

    - A scheduler that does not read forecasts runs with ``forecaster="none"`` (and no
      ``calibrate_forecasts``) unless a forecaster is given.
    - One that reads them gets the forecaster it names, else the one given, else the env's default
      (``EnvConfig.forecaster``); ``forecaster="none"`` for it is an error.
    - Its fixed ``settings`` (e.g. ``history_window``) are applied; a different given value is an error.
    """
    needs = requirements_of(scheduler)
    name = type(scheduler).__name__
    config = {"curve_split": "test", **env_kwargs}
    given = env_kwargs.get("forecaster")
    if needs.forecaster is not None:
        if given is not None and given != needs.forecaster:
            raise ValueError(f"{name} needs forecaster={needs.forecaster!r}, got forecaster={given!r}")
        config["forecaster"] = needs.forecaster
    elif not needs.reads_forecasts:
        if given is None:  # no forecasts to read, none to calibrate: what it sees is the same
            config["forecaster"] = "none"
            config.pop("calibrate_forecasts", None)
    elif given in (None, "none"):
        if given == "none":
            raise ValueError(f"{name} reads forecast features, so it cannot run with forecaster='none'")
        config["forecaster"] = DEFAULTS.forecaster
    for key, value in needs.settings.items():
        if key in env_kwargs and env_kwargs[key] != value:
            raise ValueError(f"{name} needs {key}={value!r}, got {key}={env_kwargs[key]!r}")
        config[key] = value
    return config


def evaluate(agent: Scheduler | str, seeds: Iterable[int], progress: bool = False, **env_kwargs) -> list[dict]:
    """Play one episode per seed and return one record per episode.

    Parameters
    ----------
    agent:
        A scheduler, or an agent spec (``mara_agents.load_agent(agent)``: a registered name, ``NAME:CHECKPOINT``,
        ``module:Class``, any of them ending ``@FORECASTER``).
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
        ``invalid_actions``, ``return`` (the team return, shaped if ``shaping=True``), ``wall_seconds``,
        ``upper_bound`` and ``upper_bound_rate``.
    """
    scheduler = load_agent(agent) if isinstance(agent, str) else agent
    env = raw_env(**env_config(scheduler, env_kwargs))
    seeds = list(seeds)
    label = agent if isinstance(agent, str) else type(agent).__name__
    return [play_episode(env, scheduler, s) for s in tqdm(seeds, desc=label, disable=not progress, leave=False)]
