"""The synthetic workload, the episode generator and load presets."""

import numpy as np
import pytest

from mara_env.workloads import (
    LOAD_PRESETS,
    DeadlineModel,
    SyntheticWorkload,
    arrival_rate,
    generate_episode,
    make_workload,
    resolve_load,
    workload_mean_work,
)
from mara_env.workloads.recorded import NEW_BANKS, RECORDED_BANKS
from mara_env.workloads.synthetic import FAMILIES


def test_synthetic_curves_decrease_reach_their_target_and_cover_every_family():
    draws = SyntheticWorkload().sample_tasks(np.random.default_rng(0), 400)
    assert {d.family for d in draws} == set(FAMILIES)
    for d in draws:
        losses = d.curve.losses
        assert np.all(np.isfinite(losses)) and np.all(losses > 0)
        assert losses[-20:].mean() < losses[:5].mean()  # decreasing overall
        need = d.curve.work_to_reach(d.target)
        assert 0 < need <= d.curve.max_work
        assert d.target < losses[0]
        assert 0.6 <= d.scaling_exponent <= 0.95


def test_required_work_spans_a_few_to_about_a_hundred_node_slots():
    draws = SyntheticWorkload().sample_tasks(np.random.default_rng(1), 2000)
    need = np.array([d.curve.work_to_reach(d.target) for d in draws])
    assert need.min() >= 4.0 - 1e-9 and need.max() <= 96.0 + 1e-9  # the drawn need, exactly
    assert need.mean() == pytest.approx(92 / np.log(24), rel=0.05)  # mean of log-uniform(4, 96)
    assert workload_mean_work("synthetic") == pytest.approx(need.mean(), rel=0.1)


def test_episode_tasks_are_decided_within_the_horizon():
    rng = np.random.default_rng(2)
    tasks = generate_episode(SyntheticWorkload(), rng, rate=0.5, horizon=200)
    assert tasks, "a rate of 0.5 over 200 slots must generate tasks"
    assert all(t.arrival <= t.deadline < 200 for t in tasks)
    assert [t.task_id for t in tasks] == list(range(len(tasks)))
    assert all(np.diff([t.arrival for t in tasks]) >= 0)


def test_deadline_gives_the_drawn_slack_over_the_typical_share():
    draw = SyntheticWorkload().sample_tasks(np.random.default_rng(3), 1)[0]
    need = draw.curve.work_to_reach(draw.target)
    model = DeadlineModel(slack_range=(2.0, 2.0), typical_nodes=1)
    assert model.deadline(np.random.default_rng(0), 10, draw) == 10 + int(np.ceil(2.0 * need)) - 1


def test_same_seed_same_tasks():
    a = generate_episode(SyntheticWorkload(), np.random.default_rng(9), 0.4, 100)
    b = generate_episode(SyntheticWorkload(), np.random.default_rng(9), 0.4, 100)
    assert [(t.arrival, t.deadline, t.target) for t in a] == [(t.arrival, t.deadline, t.target) for t in b]


def test_load_presets_and_rate():
    assert LOAD_PRESETS["heavy"] == pytest.approx(1.5 * LOAD_PRESETS["train"])
    assert LOAD_PRESETS["extreme"] == pytest.approx(2.0 * LOAD_PRESETS["train"])
    assert resolve_load("heavy") == LOAD_PRESETS["heavy"]
    assert resolve_load(0.7) == 0.7
    assert arrival_rate(1.0, total_speed=8.0, mean_required_work=32.0) == 0.25


@pytest.mark.parametrize("bad", [0, -1, float("nan"), float("inf"), "light", True, None])
def test_bad_loads(bad):
    with pytest.raises(ValueError, match="load must be"):
        resolve_load(bad)


def test_unknown_workload():
    with pytest.raises(ValueError, match="workload must be one of"):
        make_workload("imagenet")


@pytest.mark.parametrize("workload", ["synthetic", "vision", "rl", "mixed"])
@pytest.mark.parametrize("load", ["train", "heavy", "extreme"])
def test_every_preset_runs_in_the_env(workload, load):
    import mara_agents

    record = mara_agents.evaluate("edf", [0], workload=workload, load=load, horizon=120)[0]
    assert record["arrived"] > 0
    assert record["completed"] + record["expired"] == record["arrived"]


@pytest.mark.parametrize("workload", NEW_BANKS)
def test_every_new_bank_is_a_workload_the_env_runs(workload):
    import mara_agents

    record = mara_agents.evaluate("edf", [0], workload=workload, load="train", horizon=100)[0]
    assert record["arrived"] > 0
    assert record["completed"] + record["expired"] == record["arrived"]


def test_mixed_draws_from_every_bank():
    from mara_env.workloads import MixedWorkload

    mixed = MixedWorkload("train")
    assert [p.name for p in mixed.parts] == ["synthetic", *RECORDED_BANKS]
    assert len(mixed.sample_tasks(np.random.default_rng(0), 40)) == 40


@pytest.mark.parametrize("workload", RECORDED_BANKS)
def test_recorded_workloads_draw_only_from_their_split(workload):
    from mara_env.workloads import RecordedWorkload, load_bank
    from mara_env.workloads.bank import split_of_key

    test = RecordedWorkload(workload, "test")
    bank = load_bank(workload)
    test_curves = {m["key"] for m in bank.meta if split_of_key(m["key"]) == "test"}
    assert len(test.curves) <= len(test_curves)
    draws = test.sample_tasks(np.random.default_rng(0), 50)
    losses_of_test = {bank.losses[i].tobytes() for i, m in enumerate(bank.meta) if m["key"] in test_curves}
    assert all(d.curve.losses.astype(np.float32).tobytes() in losses_of_test for d in draws)
    for d in draws:
        need = d.curve.work_to_reach(d.target)
        assert 4.0 - 1e-6 <= need <= 96.0 + 1e-6 and d.target < d.curve.losses[0]
