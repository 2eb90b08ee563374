"""The split step after the rule-gate step: big clusters get a gate of their own (``split_step``)."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from mara_agents.mara import own_play_refits, split_step
from mara_agents.mara.checkpoint import load_checkpoint
from mara_agents.mara.gate_dagger import GateLabels
from mara_agents.mara.guidance import check_gate_settings
from mara_agents.mara.own_play_refits import latest_refit
from mara_agents.mara.ppo import PPOConfig, train
from mara_agents.mara.rule_gate_refit import LabelPlay
from mara_agents.mara.slot_network import SlotMARANet
from tests.test_mara_policy import _train_mara_config

SMALL_GATE = ("gate.weight", "gate.bias", "gate_hidden.weight", "gate_hidden.bias")
ROOT = Path(__file__).resolve().parent.parent


def _state(path: Path) -> dict[str, torch.Tensor]:
    return load_checkpoint(path)[0].state_dict()


def test_a_training_run_with_the_split_step_goes_on_with_the_split_network(tmp_path, monkeypatch):
    config = _train_mara_config(monkeypatch, "--quick", "--generalist", "--forecaster", "wls")
    config.rule_gate, config.split_step, config.eval_seeds, config.total_turns = True, True, 1, 1024
    config.scenarios = dataclasses.replace(config.scenarios, nodes=(2, 17), max_tasks_cap=40)
    tiny = (LabelPlay("corner", 3, 0, warmup=False, focused=True), LabelPlay("other", 3, 3, True, False))
    refit = own_play_refits.rule_gate_refit
    monkeypatch.setattr(own_play_refits, "rule_gate_refit", lambda *a, **k: refit(*a, **k, plays=tiny, steps=20))
    monkeypatch.setattr(split_step, "RULE_FIT_STEPS", 20)
    monkeypatch.setattr(split_step, "BIG_RL_EPISODES", 2)
    run = tmp_path / "run"
    train(config, run, progress=False)

    split = load_checkpoint(run / "warm_start_split.pt")[0]
    assert split.config["split_gate"] and split.config["gate_rule_big"]
    assert load_checkpoint(run / "checkpoint.pt")[0].config["split_gate"]  # PPO trained the split network
    limited, first, final = (_state(run / name) for name in (split_step.LIMITED_FILE, split_step.FIRST_FILE,
                                                               "warm_start_split.pt"))  # fmt: skip
    assert "big_gate.weight" not in limited
    for name in SMALL_GATE:  # both splits leave small clusters exactly as the limited network plays them
        assert torch.equal(first[name], limited[name]) and torch.equal(final[name], limited[name])
    assert not torch.equal(final["big_gate_hidden.weight"], limited["gate_hidden.weight"])  # the big gate was fitted
    assert not torch.equal(final["big_gate_hidden.weight"], first["big_gate_hidden.weight"])  # on more labels
    played = GateLabels.load(run / split_step.PLAY_LABELS_FILE)
    assert len(played) > 0 and set(played.workloads) == {"rl"} and (played.nodes >= 17).all()  # big rl alone
    record = json.loads((run / "warm_start_split.json").read_text())
    assert [part["part"] for part in record["rounds"]] == ["limited", "first split", "play on big rl", "split"]
    step_slots = len(GateLabels.load(run / "warm_start_rule_gate_labels.npz"))
    assert record["rounds"][-1]["slots"] == step_slots + len(played)  # the split fits both label sets
    assert 0.0 <= record["eval_completion_rate"] <= 1.0


def test_the_split_step_needs_the_rule_gate_step(monkeypatch):
    net = SlotMARANet(width=16, layers=1, heads=2, planner_hints=True, pick_hints=True, uniform_pick=True)
    with pytest.raises(ValueError, match="split_step splits the rule-gate step's network: it needs rule_gate"):
        check_gate_settings(net, PPOConfig(teacher="best_shared", split_step=True))
    assert _train_mara_config(monkeypatch, "--generalist", "--split-step").split_step
    assert not _train_mara_config(monkeypatch, "--generalist").split_step  # off unless asked
    with pytest.raises(SystemExit, match="--split-step splits the rule-gate step's network"):
        _train_mara_config(monkeypatch, "--generalist", "--no-rule-gate", "--split-step")


def test_later_refits_start_from_the_split_network(tmp_path):
    split = PPOConfig(rule_gate=True, split_step=True)
    assert latest_refit(split, tmp_path, "gate") == latest_refit(split, tmp_path, "actions")
    assert latest_refit(split, tmp_path, "gate") == tmp_path / "warm_start_split.pt"
    assert latest_refit(PPOConfig(rule_gate=True, split_step=True, gate_rounds=1), tmp_path, "actions") == (
        tmp_path / "warm_start_gate.pt"
    )


def test_the_split_step_script_refuses_a_run_without_a_rule_gate_step(tmp_path):
    (tmp_path / "run").mkdir()
    np.savez(tmp_path / "run" / "warm_start_rule_gate_labels.npz", inputs=np.zeros((1, 1)))
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "split_step.py"), "--run", str(tmp_path / "run"), "--out",
         str(tmp_path / "out")], capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 2 and "holds no finished rule-gate step (missing rule_gate_player.pt)" in done.stderr
    assert not (tmp_path / "out").exists()  # nothing written


def test_the_split_network_records_its_run_settings_with_the_split_step_on(tmp_path, monkeypatch):
    from mara_agents.mara.checkpoint import save_checkpoint

    monkeypatch.syspath_prepend(str(ROOT / "examples"))
    from split_step import split_record  # examples/split_step.py

    net = SlotMARANet(width=16, layers=1, heads=2, planner_hints=True, pick_hints=True, uniform_pick=True)
    assert split_record(tmp_path) == {"split_step": str(tmp_path)}  # a run without the step's copy: no settings
    settings = {"rule_gate": True, "split_step": False, "seed": 3}
    save_checkpoint(net, tmp_path / "warm_start_rule_gate.pt", {}, {"config": settings, "iteration": 0})
    record = split_record(tmp_path)
    assert record["config"] == {**settings, "split_step": True} and record["iteration"] == 0


def test_scenarios_that_cannot_reach_big_clusters_are_refused_before_any_fit(tmp_path):
    from mara_agents.mara.scenarios import ScenarioSampler

    small = ScenarioSampler(nodes=(2, 6), max_tasks_cap=24, fixed={"forecaster": "wls"})
    with pytest.raises(ValueError, match="min_nodes"):
        split_step.split_step(tmp_path / "p.pt", tmp_path / "l.npz", {}, "best_shared", small, tmp_path / "out")
    assert not (tmp_path / "out").exists()  # nothing written
