"""Who plays a big cluster's warm-up slots: the teacher by default, a planner drawn from the seed with
``mixed_warmup`` (mara_agents.mara.warmup)."""

from __future__ import annotations

import numpy as np
import pytest

import mara_agents
from mara_agents.mara.scenarios import ScenarioSampler, scenario_settings
from mara_agents.mara.teacher import Teacher
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
    with pytest.raises(ValueError, match="mixed_warmup and random_window shape the warm-up: they need warmup=True"):
        ScenarioSampler(fixed=FIXED, mixed_warmup=True)


def test_train_mara_warmup_flags_set_the_sampler_and_are_refused_without_a_warmup(monkeypatch):
    from tests.test_mara_policy import _train_mara_config

    default = _train_mara_config(monkeypatch, "--generalist").scenarios  # the default run's: both on
    assert default.mixed_warmup and default.random_window
    off = _train_mara_config(monkeypatch, "--generalist", "--no-mixed-warmup", "--no-random-window").scenarios
    assert not off.mixed_warmup and not off.random_window
    no_warmup = _train_mara_config(monkeypatch, "--generalist", "--no-warmup").scenarios
    assert not no_warmup.mixed_warmup and not no_warmup.random_window
    for flag in ("--mixed-warmup", "--random-window"):
        for argv in ([flag], ["--generalist", "--no-warmup", flag]):
            with pytest.raises(SystemExit, match=f"{flag} shapes the warm-up: it needs --generalist"):
                _train_mara_config(monkeypatch, *argv)


def _windowed(random_window: bool = True) -> ScenarioSampler:
    return ScenarioSampler(fixed=FIXED, warmup=True, random_window=random_window, **SMALL)


def test_a_random_window_starts_anywhere_before_the_last_one_and_keeps_its_length():
    from mara_agents.mara.warmup import LearnerWindow, learner_window

    sampler = _windowed()
    settings = {"num_nodes": 4, "horizon": 30}  # 40 // 4 = 10 learned slots: the last window starts at 20
    windows = [learner_window(sampler, settings, seed) for seed in range(300)]
    assert windows == [learner_window(sampler, settings, seed) for seed in range(300)]  # seeded
    assert {w.start for w in windows} == set(range(21))  # every start from 0 to 20
    assert all(w.cut == w.start + 10 for w in windows if w.start < 20)
    assert all(w.cut is None for w in windows if w.start == 20)  # the last window runs to the horizon
    assert learner_window(_windowed(False), settings, 0) == LearnerWindow(20, None)
    assert learner_window(sampler, {"num_nodes": 4, "horizon": 10}, 0) == LearnerWindow(0, None)  # whole episodes


def _cut_seed(sampler: ScenarioSampler) -> int:
    """A training seed whose window is cut before the horizon."""
    from mara_agents.mara.scenarios import TRAINING_SEED_BASE
    from mara_agents.mara.warmup import learner_window

    for seed in range(TRAINING_SEED_BASE, TRAINING_SEED_BASE + 100):
        window = learner_window(sampler, scenario_settings({}, sampler, seed), seed)
        if window.cut is not None and window.start > 0:
            return seed
    raise AssertionError("no cut window in 100 seeds")


def test_a_rollout_copy_ends_its_episode_at_the_cut_with_the_state_there():
    from mara_agents.mara.warmup import learner_window
    from mara_agents.mara.workers import EnvCopy

    sampler = _windowed()
    seed = _cut_seed(sampler)
    window = learner_window(sampler, scenario_settings({}, sampler, seed), seed)
    copy = EnvCopy({}, [seed, seed + 1], None, sampler)
    assert copy.env.sim.slot == window.start
    turn, slots = copy.turn(), []
    while not turn.done:
        slots.append(copy.env.sim.slot)
        turn = copy.step(0)
    assert slots[0] == window.start and slots[-1] == window.cut - 1  # the learner played the window alone
    # the state there, padded as every state the learner gets; the episode is not over, so no rate
    assert turn.cut_state is not None and turn.cut_state.shape == turn.state.shape and turn.finished is None


def test_demonstrations_record_only_the_window_with_returns_to_the_episodes_end():
    from mara_agents.mara.imitation import play_teacher_episode
    from mara_agents.mara.warmup import learner_window

    sampler = _windowed()
    seed = _cut_seed(sampler)
    settings = scenario_settings({}, sampler, seed)
    window = learner_window(sampler, settings, seed)
    obs, _, _, actions, returns, _, _ = play_teacher_episode({}, "srw", seed, sampler)
    # the same episode played by srw alone: each turn's slot and reward
    env, srw = raw_env(**settings), Teacher.for_env("srw", settings)
    env.reset(seed=seed)
    srw.reset(seed)
    slots, rewards = [], []
    for agent in live_turns(env):
        slots.append(env.sim.slot)
        env.step(srw.action(env, env.observe(agent)))
        rewards.append(env.rewards[agent])
    to_come = np.cumsum(rewards[::-1])[::-1]  # gamma = 1, to the episode's end
    window_turns = (np.asarray(slots) >= window.start) & (np.asarray(slots) < window.cut)
    assert len(actions) == len(obs) == int(window_turns.sum()) > 0
    assert np.allclose(returns, to_come[window_turns])


def test_a_cut_turn_gets_the_critics_value_of_the_state_there():
    from mara_agents.mara.advantages import RunningMeanStd
    from mara_agents.mara.rollout import cut_values
    from mara_agents.mara.workers import Turn

    class Critic:
        def value(self, states, m, k):  # the value of a state is its first entry
            return states[:, 0].clone()

    stats = RunningMeanStd()
    stats.mean, stats.var = 10.0, 4.0  # values come back as value * std + mean = value * 2 + 10
    plain = Turn(np.zeros(3), np.ones(2), np.zeros(4), -1, -1)
    cut = plain._replace(done=True, cut_state=np.array([1.5, 0.0, 0.0, 0.0], dtype=np.float32))
    values = cut_values(Critic(), [plain, cut, plain._replace(done=True)], 2, 1, stats)
    assert values == pytest.approx([0.0, 13.0, 0.0])  # only the cut copy: 1.5 * 2 + 10
