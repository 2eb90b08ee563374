"""Cloning turns weighted by their label's rule: ``path_weighting`` and ``clone(path_weights=...)``."""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest
import torch

from mara_agents.mara.checkpoint import save_checkpoint
from mara_agents.mara.gate_paths import GATE_PATHS
from mara_agents.mara.imitation import clone, cloning_loss, collect_demonstrations
from mara_agents.mara.path_weighting import accuracy_by_path, check_path_weights, turn_weights
from mara_agents.mara.slot_network import SlotMARANet
from tests.scripts import run_script

SMALL_ENV = {"num_nodes": 4, "max_tasks": 4, "horizon": 80, "workload": "synthetic", "load": "extreme",
             "forecaster": "wls"}  # fmt: skip
CORNER_TEACHER = "best_shared+edf_uniform~synthetic,2,0.7"  # edf_uniform alone here: it labels edf and uniform turns


def _net() -> SlotMARANet:
    torch.manual_seed(0)
    return SlotMARANet(width=16, layers=1, heads=2, planner_hints=True, pick_hints=True, uniform_pick=True)


def test_each_turn_weighs_as_its_rule_and_unnamed_rules_weigh_one():
    paths = np.array([0, 1, 2, -1, 1])  # srw, edf, uniform, no planner, edf
    assert torch.equal(turn_weights(paths, {"edf": 3.0}), torch.tensor([1.0, 3.0, 1.0, 1.0, 3.0]))
    assert torch.equal(turn_weights(paths, {"srw": 0.5, "uniform": 2}), torch.tensor([0.5, 1.0, 2.0, 1.0, 1.0]))
    assert turn_weights(paths, {}) is None and turn_weights(None, {}) is None  # nothing weighed: plain mean


def test_bad_weights_are_refused_by_name():
    with pytest.raises(ValueError, match="unknown rule 'lara' to weigh: allowed are srw, edf, uniform"):
        check_path_weights({"lara": 2.0})
    for bad in (0.0, -1.0, math.nan, math.inf, True, "2"):
        with pytest.raises(ValueError, match="the weight of 'edf' turns must be a finite number > 0"):
            check_path_weights({"edf": bad})
    with pytest.raises(ValueError, match="needs demonstrations with paths"):
        turn_weights(None, {"edf": 2.0})


def test_a_weighted_loss_counts_each_turn_as_often_as_its_weight():
    logits = torch.tensor([[2.0, 0.0, -1.0], [0.0, 1.0, 0.5]], requires_grad=True)
    actions = torch.tensor([0, 2])
    weighted = cloning_loss(logits, actions, torch.tensor([1.0, 3.0]))
    # by hand: the second turn three times over
    log_p = torch.log_softmax(logits, -1)
    by_hand = -(log_p[0, 0] + 3 * log_p[1, 2]) / 4
    assert torch.allclose(weighted, by_hand)
    repeated = cloning_loss(logits[[0, 1, 1, 1]], actions[[0, 1, 1, 1]], None)
    assert torch.allclose(weighted, repeated)
    assert torch.allclose(cloning_loss(logits, actions, torch.ones(2)), cloning_loss(logits, actions, None))


def test_accuracy_by_path_splits_the_hits_by_rule():
    correct = np.array([True, False, True, True, False, True])
    paths = np.array([1, 1, 2, 2, 2, -1])
    assert accuracy_by_path(correct, paths) == {"accuracy_edf": 0.5, "accuracy_uniform": 2 / 3}  # no srw turn


def test_clone_reports_each_rules_accuracy_and_weighs_the_named_rule():
    demos = collect_demonstrations(SMALL_ENV, CORNER_TEACHER, [1, 2], processes=1, progress=False)
    counts = {path: int((demos.paths == GATE_PATHS.index(path)).sum()) for path in ("edf", "uniform")}
    assert counts["edf"] and counts["uniform"] and (demos.paths >= 0).all()  # both rules play here
    plain_net, weighted_net = _net(), _net()
    plain = clone(plain_net, demos, 4, 4, epochs=2, learning_rate=1e-2, progress=False)
    shares = sum(plain[f"accuracy_{path}"] * count for path, count in counts.items()) / len(demos)
    assert shares == pytest.approx(plain["bc_accuracy"])  # the split adds up to the whole
    weighted = clone(weighted_net, demos, 4, 4, epochs=2, learning_rate=1e-2, progress=False, path_weights={"edf": 5})
    assert weighted["bc_loss"] != pytest.approx(plain["bc_loss"])  # the weights changed the fit
    assert not torch.equal(weighted_net.row_score.weight, plain_net.row_score.weight)
    with pytest.raises(ValueError, match="unknown rule 'oracle'"):
        clone(_net(), demos, 4, 4, epochs=1, progress=False, path_weights={"oracle": 2.0})


def test_tune_actions_refuses_bad_path_weights_before_writing(tmp_path):
    checkpoint = save_checkpoint(_net(), tmp_path / "net.pt", SMALL_ENV)
    out = tmp_path / "out"
    script = [sys.executable, "examples/tune_actions.py", "--checkpoint", str(checkpoint), "--out", str(out)]
    for flags, message in (
        (["--path-weight", "lara", "2"], "--path-weight: unknown rule 'lara' to weigh"),
        (["--path-weight", "edf", "0"], "must be a finite number > 0, got 0.0"),
        (["--path-weight", "edf", "x"], "the weight must be a number, got 'x'"),
        (["--path-weight", "edf", "2", "--path-weight", "edf", "3"], "'edf' is given twice"),
    ):
        done = run_script([*script, *flags])
        assert done.returncode == 2 and message in done.stderr, done.stderr
    assert not out.exists()
