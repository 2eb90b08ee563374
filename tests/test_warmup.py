"""Who plays a big cluster's warm-up slots: the teacher by default, a planner drawn from the seed with
``mixed_warmup`` (mara_agents.mara.warmup)."""

from __future__ import annotations

import numpy as np
import pytest

import mara_agents
from mara_agents.mara.scenarios import ScenarioSampler, scenario_settings
from mara_agents.mara.warmup import WARMUP_PLANNERS, play_warmup, warmup_planner
from mara_env.env import live_turns, raw_env

FIXED = {"shaping": True, "forecaster": "flow_fixed", "curve_split": "train"}
SMALL = {"nodes": (3, 4), "max_tasks_cap": 16, "turns_per_episode": 40, "horizon": (30, 30)}


class RefusingTeacher:
    """A teacher that must not be asked to play: a mixed warm-up never hands it the slots."""

    def play_until(self, env, slot):
        raise AssertionError("the teacher played the warm-up")


def _sampler(mixed: bool) -> ScenarioSampler:
    return ScenarioSampler(fixed=FIXED, warmup=True, mixed_warmup=mixed, **SMALL)


def test_the_planner_is_drawn_from_the_seed_alone_and_each_is_drawn():
    mixed = _sampler(True)
    drawn = [warmup_planner(mixed, seed) for seed in range(600)]
    assert drawn == [warmup_planner(mixed, seed) for seed in range(600)]  # seeded, no global state
    counts = np.array([drawn.count(name) for name in WARMUP_PLANNERS])
    assert counts.sum() == 600 and np.all(np.abs(counts - 200) < 45)  # about a third each
    assert warmup_planner(_sampler(False), 0) is None and warmup_planner(None, 0) is None


def test_mixed_warmup_leaves_the_scenario_draws_alone():
    assert all(scenario_settings({}, _sampler(True), s) == scenario_settings({}, _sampler(False), s) for s in range(50))


def _played(seed: int, mixed: bool, teacher=None) -> tuple[raw_env, int]:
    sampler = _sampler(mixed)
    settings = scenario_settings({}, sampler, seed)
    env = raw_env(**settings)
    env.reset(seed=seed)
    play_warmup(env, sampler, settings, seed, teacher)
    return env, sampler.warmup_slots(settings)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_a_mixed_warmup_is_the_drawn_planners_play_up_to_the_learners_first_slot(seed):
    env, slots = _played(seed, True, RefusingTeacher())
    assert slots > 0 and env.sim.slot == slots
    # the same episode played by the drawn planner alone reaches the very same state
    name = warmup_planner(_sampler(True), seed)
    alone = raw_env(**scenario_settings({}, _sampler(True), seed))
    alone.reset(seed=seed)
    planner = mara_agents.make(name)
    planner.reset(seed)
    for agent in live_turns(alone):
        if alone.sim.slot >= slots:
            break
        alone.step(planner.act(alone.observe(agent), agent))
    assert np.array_equal(env.state(), alone.state())


def test_a_mixed_warmup_hands_over_other_states_than_srw_alone():
    """Without a mixed warm-up and without a teacher srw plays; where another planner is drawn, the
    learner takes over a cluster in another state on some episodes (on a small one they may agree)."""
    differ = []
    for seed in range(12):
        if warmup_planner(_sampler(True), seed) != "srw":
            mixed, plain = _played(seed, True)[0], _played(seed, False)[0]
            differ.append(not np.array_equal(mixed.state(), plain.state()))
    assert len(differ) >= 4 and any(differ)


def test_mixed_warmup_needs_the_warmup():
    with pytest.raises(ValueError, match="mixed_warmup .* needs warmup=True"):
        ScenarioSampler(fixed=FIXED, mixed_warmup=True)


def test_train_mara_mixed_warmup_sets_the_sampler_and_refuses_without_a_warmup(monkeypatch):
    from tests.test_mara_policy import _train_mara_config

    assert _train_mara_config(monkeypatch, "--generalist", "--mixed-warmup").scenarios.mixed_warmup
    assert not _train_mara_config(monkeypatch, "--generalist").scenarios.mixed_warmup
    for argv in (["--mixed-warmup"], ["--generalist", "--no-warmup", "--mixed-warmup"]):
        with pytest.raises(SystemExit, match="--mixed-warmup picks who plays the warm-up: it needs --generalist"):
            _train_mara_config(monkeypatch, *argv)
