"""Training over scenarios: the sampler, padding that changes nothing, and disjoint training seeds."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch

import mara_env
from mara_agents.mara.imitation import play_teacher_episode
from mara_agents.mara.scenarios import TRAINING_SEED_BASE, Padding, ScenarioSampler, scenario_settings
from mara_agents.mara.slot_network import SlotMARANet
from mara_agents.mara.teacher import Teacher
from mara_agents.mara.workers import EnvCopy, WorkerPool, copy_seeds
from mara_env.env import live_turns
from mara_env.observation import layout_of


def test_sampler_is_seeded_and_stays_in_its_ranges():
    sampler = ScenarioSampler()
    draws = [sampler.sample(np.random.default_rng(seed)) for seed in range(200)]
    assert draws[:5] == [sampler.sample(np.random.default_rng(seed)) for seed in range(5)]
    nodes = [d["num_nodes"] for d in draws]
    assert min(nodes) == 2 and max(nodes) >= 40
    assert all(8 <= d["max_tasks"] <= 64 and 0.7 <= d["load"] <= 3.5 for d in draws)
    assert {d["arrivals"] for d in draws} == {"poisson", "bursty", "diurnal"}
    assert 20 < sum("faults" in d for d in draws) < 70 and 30 < sum("node_speeds" in d for d in draws) < 100
    assert all(60 <= d["horizon"] <= 300 and d["shaping"] for d in draws)
    mara_env.raw_env(**draws[0])  # a valid env
    with pytest.raises(ValueError, match="unknown workloads"):
        ScenarioSampler(workloads=("imagenet",))


def test_training_seeds_on_scenarios_are_disjoint_from_evaluation_seeds():
    seeds = copy_seeds(16, seed=0, episodes_per_copy=100_000, scenarios=True)
    assert min(min(s) for s in seeds) >= TRAINING_SEED_BASE
    assert copy_seeds(2, 0, 10)[0][0] == 0  # the single-scenario run keeps the shipped policy's seeds


def _turn(env):
    agent = next(live_turns(env))
    return env.observe(agent), env.state()


def test_padding_changes_neither_the_policy_nor_the_critic():
    torch.manual_seed(0)
    net = SlotMARANet(width=32, layers=1).eval()
    env = mara_env.raw_env(num_nodes=3, max_tasks=6, forecaster="none", load="heavy", horizon=40)
    env.reset(seed=4)
    rng = np.random.default_rng(0)
    padding = Padding(max_tasks=16, max_nodes=8)
    for _ in range(3 * 20):
        observation, state = _turn(env)
        big, big_state = padding.observation(observation), padding.state(state)
        assert big["observation"].size == layout_of(big["observation"]).size and big["action_mask"].size == 17
        with torch.no_grad():
            small = net.logits(
                torch.as_tensor(observation["observation"])[None],
                torch.as_tensor(observation["action_mask"], dtype=torch.float32)[None],
            )[0]
            padded = net.logits(
                torch.as_tensor(big["observation"])[None],
                torch.as_tensor(big["action_mask"], dtype=torch.float32)[None],
            )[0]
            values = net.value(torch.as_tensor(np.stack([state]))), net.value(torch.as_tensor(np.stack([big_state])))
        allowed = np.flatnonzero(observation["action_mask"])
        torch.testing.assert_close(padded[allowed], small[allowed], rtol=1e-5, atol=1e-5)
        assert torch.isinf(padded[7:]).all()
        torch.testing.assert_close(values[0], values[1], rtol=1e-5, atol=1e-5)
        env.step(int(rng.choice(allowed)))


def test_copies_on_scenarios_give_equal_sized_turns():
    sampler = ScenarioSampler(
        nodes=(2, 5),
        max_tasks_cap=12,
        turns_per_episode=40,
        horizon=(10, 20),
        fixed={"shaping": True, "forecaster": "none", "curve_split": "train"},
    )
    pool = WorkerPool(3, {}, seed=1, processes=1, teacher="lara", scenarios=sampler)
    try:
        turns, sizes, ended = pool.observe(), set(), 0
        for _ in range(120):
            sizes |= {(t[0].size, t[1].size, t[2].size) for t in turns}
            turns = pool.step(np.array([int(np.flatnonzero(t[1])[-1]) for t in turns]))
            ended += sum(t.done for t in turns)
    finally:
        pool.close()
    assert len(sizes) == 1 and ended >= 3  # several episodes of different scenarios, one shape


def test_warmup_plays_full_episodes_and_leaves_the_learner_their_last_slots():
    sampler = ScenarioSampler(warmup=True)
    # the learner keeps turns_per_episode / M slots of the 300: 2400 // 64 = 37, 2400 // 16 = 150
    assert sampler.warmup_slots({"num_nodes": 64, "horizon": 300}) == 263
    assert sampler.warmup_slots({"num_nodes": 16, "horizon": 300}) == 150
    assert sampler.warmup_slots({"num_nodes": 8, "horizon": 300}) == 0  # small clusters: the whole episode
    assert ScenarioSampler().warmup_slots({"num_nodes": 64, "horizon": 60}) == 0
    draws = [sampler.sample(np.random.default_rng(seed)) for seed in range(50)]
    assert all(d["horizon"] == 300 for d in draws)


def test_teacher_plays_until_the_warmup_slot():
    env = mara_env.raw_env(num_nodes=4, max_tasks=8, forecaster="none", load="heavy", horizon=30)
    env.reset(seed=3)
    teacher = Teacher.for_env("oracle", {"num_nodes": 4, "max_tasks": 8, "forecaster": "none"})
    teacher.reset(3)
    teacher.play_until(env, 12)
    assert env.sim.slot == 12 and env.agents  # stopped at the first turn of slot 12, episode still live


def test_demonstrations_record_only_the_turns_after_the_warmup():
    fixed = {"shaping": True, "forecaster": "none", "curve_split": "train"}
    sampler = ScenarioSampler(nodes=(4, 4), max_tasks_cap=8, turns_per_episode=40, horizon=(10, 30), fixed=fixed)
    warm = replace(sampler, warmup=True)
    seed = TRAINING_SEED_BASE + 7
    whole = play_teacher_episode({}, "oracle", seed, replace(warm, turns_per_episode=4 * 30))  # no warm-up slots
    tail = play_teacher_episode({}, "oracle", seed, warm)
    assert warm.warmup_slots(scenario_settings({}, warm, seed)) == 20  # 30 slots, 40 // 4 = 10 learned
    # the same oracle episode: the warm-started recording is the last 10 slots' turns of the whole one
    assert 0 < tail[0].shape[0] < whole[0].shape[0]
    np.testing.assert_array_equal(tail[0], whole[0][-tail[0].shape[0] :])
    np.testing.assert_array_equal(tail[4], whole[4][-tail[4].shape[0] :])  # same returns still to come
    assert tail[5] == whole[5]


@pytest.mark.parametrize("teacher", ["lara", None])  # without a teacher, srw plays the warm-up
def test_rollout_copies_start_after_the_warmup(teacher):
    fixed = {"shaping": True, "forecaster": "none", "curve_split": "train"}
    sampler = ScenarioSampler(nodes=(4, 4), max_tasks_cap=8, turns_per_episode=40, horizon=(10, 30), fixed=fixed)
    warming = replace(sampler, warmup=True)
    copy = EnvCopy({}, [TRAINING_SEED_BASE + 1, TRAINING_SEED_BASE + 2], teacher, warming)
    assert warming.warmup_slots(copy.env_settings) == 20 and copy.env.sim.slot == 20
    copy.turn()
    assert copy.env.agents  # the learner's turns are still to come
