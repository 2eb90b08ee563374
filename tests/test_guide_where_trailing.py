"""A guide that holds its floor only where the teacher leads: scenario kinds, the per-kind lead, the
per-turn weights, the worker's report of what the teacher completed, and the checks of the setting."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from mara_agents.mara.advantages import RunningMeanStd
from mara_agents.mara.guidance import (
    BEST_SINGLE,
    EPISODE_BEST,
    TeacherLead,
    check_guide_settings,
    guide_weight,
    guide_weights,
)
from mara_agents.mara.ppo import PPOConfig, _update
from mara_agents.mara.scenarios import SIZE_BANDS, scenario_kind
from mara_agents.mara.slot_network import SlotMARANet
from mara_agents.mara.workers import EnvCopy
from mara_env.workloads import WORKLOADS
from tests.test_mara_policy import _train_mara_config
from tests.test_row_buckets import _padded_turns

nan = float("nan")
ENV = {"num_nodes": 4, "max_tasks": 8, "horizon": 30, "forecaster": "wls", "curve_split": "train", "shaping": True}


def test_a_scenario_kind_is_its_workload_and_cluster_size_band():
    assert SIZE_BANDS == (8, 24)
    bands = len(SIZE_BANDS) + 1
    rl = sorted(WORKLOADS).index("rl")
    kinds = [scenario_kind({"workload": "rl", "num_nodes": m}) for m in (2, 8, 9, 24, 25, 64)]
    assert kinds == [rl * bands, rl * bands, rl * bands + 1, rl * bands + 1, rl * bands + 2, rl * bands + 2]
    every = {scenario_kind({"workload": w, "num_nodes": m}) for w in WORKLOADS for m in (4, 16, 32)}
    assert len(every) == 3 * len(WORKLOADS)  # no two kinds share a number
    assert scenario_kind({}) == scenario_kind({"workload": "synthetic", "num_nodes": 8})  # the env's defaults


def test_the_lead_is_the_mean_of_a_kinds_last_episodes():
    lead = TeacherLead(window=2)  # against each episode's best candidate
    lead.record(1, (0.6, 0.2), 0.5)  # the teacher led by 0.1
    lead.record(1, (0.3, 0.4), 0.45)  # then trailed by 0.05: mean +0.025
    lead.record(2, (0.5, nan), 0.6)  # kind 2: the student leads by 0.1 (the second candidate did not play)
    assert lead.lead(1) == pytest.approx(0.025) and lead.lead(2) == pytest.approx(-0.1)
    assert np.isnan(lead.lead(3))
    # trailing where the teacher leads, and on a kind never seen (the guide starts on everywhere)
    assert lead.trailing(np.array([[1, 2], [3, 2]])).tolist() == [[True, False], [True, False]]
    lead.record(1, (0.3, 0.1), 0.5)  # the window keeps the last two: -0.05 and -0.2
    assert lead.lead(1) == pytest.approx(-0.125) and not lead.trailing(np.array([1]))[0]
    lead.record(2, (0.5, 0.1), 0.5)  # a tie is not trailing: -0.1 and 0 average -0.05
    assert not lead.trailing(np.array([2]))[0]
    with pytest.raises(ValueError, match="window must be at least 1"):
        TeacherLead(window=0)
    with pytest.raises(ValueError, match=r"against must be one of \['episode_best', 'best_single'\]"):
        TeacherLead("best")


def test_the_best_single_candidate_is_the_one_with_the_highest_mean():
    episodes = [((0.6, 0.2), 0.45), ((0.2, 0.6), 0.45)]  # each candidate wins one episode
    per_episode, single = TeacherLead(EPISODE_BEST), TeacherLead(BEST_SINGLE)
    for rates, student in episodes:
        per_episode.record(0, rates, student)
        single.record(0, rates, student)
    # the per-episode best completes 0.6 on both; either candidate alone 0.4 on average
    assert per_episode.lead(0) == pytest.approx(0.15) and single.lead(0) == pytest.approx(-0.05)
    assert per_episode.trailing(np.array([0]))[0] and not single.trailing(np.array([0]))[0]
    single.record(5, (nan, 0.7), 0.5)  # a candidate that never played the kind does not count
    assert single.lead(5) == pytest.approx(0.2)


def test_the_floor_holds_only_on_trailing_turns():
    # coef 0.5 annealed to 0 by half of 10 iterations: 0.5, 0.4, 0.3, 0.2, 0.1, 0, ...; floor 0.25
    config = PPOConfig(guide_coef=0.5, guide_until=0.5, guide_floor=0.25)
    trailing = np.array([True, False])
    assert guide_weights(config, 4, 10, None) == guide_weight(config, 4, 10) == 0.25  # held everywhere: one weight
    config.guide_where_trailing = EPISODE_BEST
    expected = {1: [0.5, 0.5], 3: [0.3, 0.3], 4: [0.25, 0.2], 10: [0.25, 0.0]}
    for iteration, weights in expected.items():
        np.testing.assert_allclose(guide_weights(config, iteration, 10, trailing), weights, atol=1e-6)


def _batch(labels_from: int = 0) -> dict:
    obs, masks, states, actions = _padded_turns()
    n = len(actions)
    rng = np.random.default_rng(3)
    return {
        "obs": obs,
        "masks": masks,
        "states": states,
        "actions": actions,
        "labels": np.roll(actions, labels_from),
        "logprobs": np.full(n, -1.0),
        "values": rng.normal(size=n),
        "advantages": rng.normal(size=n),
        "returns": rng.normal(size=n),
    }


def _updated(guide) -> list[torch.Tensor]:
    torch.manual_seed(0)
    net = SlotMARANet(width=32, layers=1, planner_hints=True, pick_hints=True)
    optimiser = torch.optim.Adam(net.parameters(), lr=1e-2)
    torch.manual_seed(1)  # the same minibatches
    _update(net, optimiser, _batch(labels_from=1), PPOConfig(epochs=1, minibatches=2), 16, 8, RunningMeanStd(), guide)
    return [p.detach().clone() for p in net.parameters()]


def test_per_turn_weights_are_the_scalar_guide_where_equal_and_nothing_where_zero():
    n = len(_batch()["actions"])
    for a, b in zip(_updated(0.5), _updated(np.full(n, 0.5))):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
    for a, b in zip(_updated(0.0), _updated(np.zeros(n))):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
    # a weight on half the turns moves the network, and not as the whole guide does
    half = np.where(np.arange(n) % 2 == 0, 0.5, 0.0)
    moved = [not torch.allclose(a, b) for a, b in zip(_updated(half), _updated(0.0))]
    differs = [not torch.allclose(a, b) for a, b in zip(_updated(half), _updated(0.5))]
    assert any(moved) and any(differs)


def test_a_copy_reports_what_the_teacher_completed_of_each_episode():
    copy = EnvCopy(ENV, [5, 6], "best_shared+uniform")
    kind = scenario_kind(ENV)
    turn = copy.turn()
    assert turn.kind == kind and turn.candidates_finished is None
    while not turn.done:  # the student plays the teacher's own labels: it completes what the teacher did
        turn = copy.step(turn.label)
    # the teacher labelled with its best candidate (of srw, edf and uniform)
    assert turn.finished_kind == kind and len(turn.candidates_finished) == 3
    assert max(turn.candidates_finished) == turn.finished
    assert 0.0 < turn.finished <= 1.0
    copy = EnvCopy(ENV, [5, 6], "srw")  # a single teacher plays no episode of its own: nothing to compare
    turn = copy.turn()
    while not turn.done:
        turn = copy.step(turn.label)
    assert turn.candidates_finished is None and turn.finished is not None


def test_the_setting_needs_a_floor_and_a_best_teacher(monkeypatch):
    check_guide_settings(PPOConfig(guide_floor=0.0))  # off: nothing to check
    with pytest.raises(ValueError, match=r"needs guide_floor > 0 .*got 0.0"):
        check_guide_settings(PPOConfig(guide_where_trailing=EPISODE_BEST, teacher="best"))
    with pytest.raises(ValueError, match=r"needs a best teacher .*got 'srw'"):
        check_guide_settings(PPOConfig(guide_where_trailing=BEST_SINGLE, guide_floor=0.25, teacher="srw"))
    argv = ["--generalist", "--guide-floor", "0.25", "--guide-where-trailing"]
    assert _train_mara_config(monkeypatch, *argv).guide_where_trailing == "episode_best"
    assert _train_mara_config(monkeypatch, *argv, "best_single").guide_where_trailing == "best_single"
    assert _train_mara_config(monkeypatch, "--generalist", "--guide-floor", "0.25").guide_where_trailing is None
    with pytest.raises(ValueError, match=r"guide_where_trailing must be one of \['episode_best', 'best_single'\]"):
        check_guide_settings(PPOConfig(guide_where_trailing="best", guide_floor=0.25, teacher="best"))
    with pytest.raises(SystemExit, match="--guide-where-trailing: guide_where_trailing needs guide_floor > 0"):
        _train_mara_config(monkeypatch, "--generalist", "--guide-where-trailing")
    with pytest.raises(SystemExit, match="--guide-where-trailing: .*needs a best teacher"):
        _train_mara_config(monkeypatch, "--teacher", "srw", "--guide-floor", "0.25", "--guide-where-trailing")
