"""Who plays the warm-up slots of a training episode on a big cluster (:attr:`ScenarioSampler.warmup`).

By default the episode's teacher plays them, so the learner takes over a cluster whose running tasks,
switches and queues are that teacher's. With a ``best`` teacher this tells the student which candidate
labels the episode, from the state alone: a gate trained that way learns to carry on with whatever
play it sees, not to tell scenarios apart (the thirty-sixth run, docs/mara_policy.md). With
``ScenarioSampler.mixed_warmup`` a planner drawn from the episode's seed alone (:data:`WARMUP_PLANNERS`)
plays them instead, whatever the teacher labels the episode with.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from mara_agents.mara.scenarios import ScenarioSampler, warmup_slots
from mara_agents.mara.teacher import Teacher
from mara_env.env import live_turns, raw_env

WARMUP_PLANNERS = ("srw", "edf", "uniform")  # the planners a mixed warm-up draws from, uniformly
_WARMUP_STREAM = 0x3A12  # the draw's own random stream, apart from the scenario's (0x5CE7)
_WINDOW_STREAM = 0x3A13  # the learner window's own stream


class LearnerWindow(NamedTuple):
    """The slots of a training episode the learner plays: from ``start`` (a planner plays the slots
    before) until ``cut`` (the episode is cut there and its rest valued by the critic; ``None``: to
    the horizon)."""

    start: int
    cut: int | None


def learner_window(scenarios: ScenarioSampler | None, settings: dict, seed: int) -> LearnerWindow:
    """The learner's window of the episode with ``settings`` and ``seed``. With the warm-up it is the
    last ``turns_per_episode / M`` slots; with ``random_window`` as many slots from a start drawn
    uniformly (from the seed alone) between the first slot and that last window's start."""
    warm = warmup_slots(scenarios, settings)
    if not warm or not scenarios.random_window:
        return LearnerWindow(warm, None)
    start = int(np.random.default_rng([seed, _WINDOW_STREAM]).integers(warm + 1))
    return LearnerWindow(start, None if start == warm else start + settings["horizon"] - warm)


def warmup_planner(scenarios: ScenarioSampler | None, seed: int) -> str | None:
    """The planner that plays the warm-up of the episode with ``seed``: one of :data:`WARMUP_PLANNERS`
    with a mixed warm-up, else ``None`` (the teacher plays it, or ``srw`` when there is none)."""
    if scenarios is None or not scenarios.mixed_warmup:
        return None
    return WARMUP_PLANNERS[int(np.random.default_rng([seed, _WARMUP_STREAM]).integers(len(WARMUP_PLANNERS)))]


def play_warmup(
    env: raw_env, scenarios: ScenarioSampler | None, settings: dict, seed: int, teacher: Teacher | None
) -> None:
    """Play the slots before :func:`learner_window`'s start of the episode with ``settings`` and ``seed``
    on ``env`` (just reset): by the planner :func:`warmup_planner` draws, else by ``teacher``, else by
    ``srw``. No slots, no play."""
    slots = learner_window(scenarios, settings, seed).start
    if not slots:
        return
    name = warmup_planner(scenarios, seed)
    if name is None and teacher is not None:
        teacher.play_until(env, slots)
        return
    if name in (None, "srw"):  # srw reads flow forecasts: a teacher brings them if the env has others
        planner = Teacher.for_env("srw", settings)
        planner.reset(seed)
        planner.play_until(env, slots)
        return
    from mara_agents.registry import load_agent

    player = load_agent(name)
    player.reset(seed)
    play_until(env, player, slots)


def play_until(env: raw_env, scheduler, slot: int) -> None:
    """Play every turn of ``env`` with ``scheduler`` (already reset) until the env reaches ``slot``."""
    for agent in live_turns(env):
        if env.sim.slot >= slot:
            return
        env.step(scheduler.act(env.observe(agent), agent))
