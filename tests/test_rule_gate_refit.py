"""The rule-gate refit: a gate that reads ``load_switch``'s path, taught to follow it on big ``tabular``
clusters and held to its own weights elsewhere."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
import torch

from mara_agents.mara.gate_dagger import GateLabels, gate_seeds
from mara_agents.mara.gate_paths import stacked_paths
from mara_agents.mara.rule_gate_refit import (
    RULE_FOCUS,
    RULE_PLAYS,
    RULE_TEACHER,
    LabelPlay,
    check_rule_plays,
    play_sampler,
    rule_gate_refit,
    rule_teacher,
)
from mara_agents.mara.scenarios import ScenarioSampler
from mara_agents.mara.slot_network import SlotMARANet
from tests.test_mara_policy import _train_mara_config

HINTED = {"planner_hints": True, "pick_hints": True, "uniform_pick": True}
FIXED = {"shaping": True, "forecaster": "wls", "curve_split": "train"}


def _net() -> SlotMARANet:
    torch.manual_seed(0)
    net = SlotMARANet(width=16, layers=1, heads=2, size_context=True, **HINTED)
    with torch.no_grad():  # a gate that is not uniform, as a trained one is not
        net.gate.weight.normal_(0.0, 1.0, generator=torch.Generator().manual_seed(1))
    return net


def test_the_plays_scenarios_and_teacher():
    sampler = ScenarioSampler(warmup=True, mixed_warmup=True, random_window=True, fixed=FIXED)
    first, warmed, everywhere, first_everywhere = (play_sampler(sampler, play) for play in RULE_PLAYS)
    assert first.focus == warmed.focus == RULE_FOCUS and everywhere == sampler
    assert not (first.warmup or first.mixed_warmup or first.random_window)
    assert warmed == dataclasses.replace(sampler, focus=RULE_FOCUS)
    no_warmup = {"warmup": False, "mixed_warmup": False, "random_window": False}
    assert first_everywhere == dataclasses.replace(sampler, **no_warmup) and first_everywhere.focus is None
    # each play has gate scenarios of its own
    seeds = [set(gate_seeds(play.first_episode, play.episodes)) for play in RULE_PLAYS]
    assert sum(map(len, seeds)) == len(set().union(*seeds)) == 900
    assert rule_teacher("best_shared+uniform") == f"best_shared+uniform+{RULE_TEACHER}"
    assert rule_teacher(rule_teacher("best_shared")) == rule_teacher("best_shared")  # added once


def test_scenarios_that_cannot_reach_the_corner_are_refused():
    with pytest.raises(ValueError, match="first_slots play cannot draw these scenarios: focus min_nodes"):
        check_rule_plays(ScenarioSampler(nodes=(2, 6), max_tasks_cap=24, fixed=FIXED))
    with pytest.raises(ValueError, match="need a scenario sampler"):
        check_rule_plays(None)
    check_rule_plays(ScenarioSampler(fixed=FIXED))  # the generalist's sizes reach it


def test_the_refit_follows_the_rule_on_the_corner_and_holds_the_gate_elsewhere(tmp_path):
    net = _net()
    env = {"forecaster": "wls"}
    sampler = ScenarioSampler(nodes=(6, 17), max_tasks_cap=40, turns_per_episode=400, horizon=(20, 40), fixed=FIXED)
    plays = (LabelPlay("corner", 12, 0, warmup=False, focused=True), LabelPlay("other", 6, 12, True, False))
    fitted, labels, report = rule_gate_refit(net, env, "best_shared", sampler, tmp_path, jobs=2, progress=False,
                                             plays=plays, steps=300)  # fmt: skip
    assert fitted.config["gate_rule"] and not net.config["gate_rule"]  # the original is unchanged
    assert [one.get("play") for one in report[:2]] == ["corner", "other"] and "taught on" in report[2]["fit"]
    assert labels.inputs.shape[1] == 16 + 2 + 3 and len(labels) == report[2]["slots"]
    corner = (labels.workloads == "tabular") & (labels.nodes >= 17)
    taught = corner & (labels.counts[:, 0] < labels.counts[:, 1:].sum(1))  # the rule's edf and uniform slots
    assert taught.sum() >= 10 and (~taught).sum() > 100
    player = torch.load(tmp_path / "rule_gate_player.pt", weights_only=True)  # the plays' player, saved
    assert player["config"]["gate_rule"]
    with torch.no_grad():
        before = stacked_paths(*net.gate_weights(torch.from_numpy(labels.inputs[:, :16])))  # the linear gate: the token
        after = stacked_paths(*fitted.gate_weights(torch.from_numpy(labels.inputs)))
    rule = labels.inputs[:, -3:].argmax(1)
    assert (after.numpy()[taught].argmax(1) == rule[taught]).mean() > 0.95  # follows the rule it reads
    # elsewhere (the corner's srw slots included) the fit is held to the gate's own weights: they move far less
    moved = np.abs(after.numpy() - before.numpy()).sum(1)
    assert moved[~taught].mean() < moved[taught].mean() / 4


def test_train_mara_rule_gate_flag(monkeypatch):
    assert _train_mara_config(monkeypatch, "--generalist", "--rule-gate").rule_gate
    assert not _train_mara_config(monkeypatch, "--generalist", "--no-rule-gate").rule_gate
    with pytest.raises(SystemExit, match="--rule-gate refits the generalist's gate"):
        _train_mara_config(monkeypatch, "--rule-gate")


def test_labels_of_the_refit_are_gate_labels(tmp_path):
    # saved as the run saves them, they load back and fit the copy's gate width
    labels = GateLabels(np.zeros((2, 21), np.float32), np.ones((2, 3), np.float32), np.array(["tabular"] * 2),
                        np.array([32, 32]))  # fmt: skip
    labels.save(tmp_path / "l.npz")
    assert GateLabels.load(tmp_path / "l.npz").inputs.shape == (2, 21)


def test_a_training_run_goes_on_with_the_refitted_copy(tmp_path, monkeypatch):
    from mara_agents.mara import own_play_refits
    from mara_agents.mara.checkpoint import load_checkpoint
    from mara_agents.mara.ppo import train

    config = _train_mara_config(monkeypatch, "--quick", "--generalist", "--forecaster", "wls")
    config.rule_gate, config.eval_seeds, config.total_turns = True, 1, 1024  # one PPO iteration
    config.scenarios = dataclasses.replace(config.scenarios, nodes=(2, 17), max_tasks_cap=40)
    tiny = (LabelPlay("corner", 3, 0, warmup=False, focused=True), LabelPlay("other", 3, 3, True, False))
    refit = own_play_refits.rule_gate_refit
    monkeypatch.setattr(own_play_refits, "rule_gate_refit", lambda *a, **k: refit(*a, **k, plays=tiny, steps=20))
    run = tmp_path / "run"
    train(config, run, progress=False)
    copy = load_checkpoint(run / "warm_start_rule_gate.pt")[0]
    assert copy.config["gate_rule"] and not load_checkpoint(run / "warm_start.pt")[0].config["gate_rule"]
    assert load_checkpoint(run / "checkpoint.pt")[0].config["gate_rule"]  # PPO trained the copy
    record = json.loads((run / "warm_start_rule_gate.json").read_text())
    assert [one.get("play") for one in record["rounds"][:2]] == ["corner", "other"]
    assert 0.0 <= record["eval_completion_rate"] <= 1.0
    assert GateLabels.load(run / "warm_start_rule_gate_labels.npz").inputs.shape[1] == 64 + 2 + 3


def test_later_refits_start_from_the_rule_gate_copy(tmp_path):
    from mara_agents.mara.own_play_refits import latest_refit
    from mara_agents.mara.ppo import PPOConfig

    assert latest_refit(PPOConfig(), tmp_path, "gate") == tmp_path / "warm_start.pt"
    ruled = PPOConfig(rule_gate=True)
    assert latest_refit(ruled, tmp_path, "gate") == latest_refit(ruled, tmp_path, "actions")
    assert latest_refit(ruled, tmp_path, "gate") == tmp_path / "warm_start_rule_gate.pt"
    both = PPOConfig(rule_gate=True, gate_rounds=1)
    assert latest_refit(both, tmp_path, "actions") == tmp_path / "warm_start_gate.pt"
