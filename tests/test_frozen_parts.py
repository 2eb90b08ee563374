"""Refits that hold parts of a slot actor fixed: ``frozen_parts`` and ``clone(freeze=...)``."""

from __future__ import annotations

import sys

import pytest
import torch
from torch import nn

from mara_agents.mara.checkpoint import save_checkpoint
from mara_agents.mara.frozen_parts import frozen, frozen_names, part_digest
from mara_agents.mara.imitation import clone, collect_demonstrations
from mara_agents.mara.slot_network import SlotMARANet
from tests.scripts import run_script

SMALL_ENV = {"num_nodes": 4, "max_tasks": 8, "horizon": 40, "workload": "synthetic", "load": "heavy",
             "forecaster": "wls"}  # fmt: skip


def _net() -> SlotMARANet:
    torch.manual_seed(0)
    return SlotMARANet(width=16, layers=1, heads=2, planner_hints=True, pick_hints=True, gate_context=True)


def test_names_cover_the_encoder_token_and_gate_and_nothing_else():
    net = _net()
    names = frozen_names(net, ["encoder", "gate"])
    assert "slot_token" in names and "gate.weight" in names and "gate_hidden.weight" in names
    assert all(name.startswith(("encoder.", "slot_token", "gate.", "gate_hidden.")) for name in names)
    assert "row_hidden.weight" not in names and "row_skip.weight" not in names  # turn heads stay free


def test_clone_with_encoder_and_gate_frozen_moves_only_the_rest():
    net = _net()
    demos = collect_demonstrations(SMALL_ENV, "srw", [1, 2], processes=1, progress=False)
    before = {name: value.detach().clone() for name, value in net.named_parameters()}
    clone(net, demos, 4, 8, epochs=2, learning_rate=1e-2, progress=False, gate_coef=0.0, freeze=("encoder", "gate"))
    held = set(frozen_names(net, ["encoder", "gate"]))
    moved = {name for name, value in net.named_parameters() if not torch.equal(value, before[name])}
    assert held and not moved & held  # every held parameter is bit for bit as before
    assert {"row_hidden.weight", "turn_hidden.weight", "row_score.weight"} <= moved  # the turn heads did move
    assert all(value.requires_grad for value in net.parameters())  # restored after the fit
    assert part_digest(net, "encoder") == part_digest(_net(), "encoder")  # gate labels made before still apply
    assert part_digest(net, "gate") == part_digest(_net(), "gate")


def test_requires_grad_is_restored_after_an_error():
    net = _net()
    net.row_score.weight.requires_grad_(False)  # a caller's own choice is kept too
    with pytest.raises(RuntimeError, match="inside"), frozen(net, ["gate"]) as trainable:
        assert not net.gate.weight.requires_grad and net.gate.weight not in set(trainable)
        raise RuntimeError("inside")
    assert net.gate.weight.requires_grad and not net.row_score.weight.requires_grad


def test_unknown_or_missing_parts_are_refused_by_name():
    with pytest.raises(ValueError, match="unknown part to freeze 'turns': allowed are encoder, gate"):
        frozen_names(_net(), ["turns"])
    with pytest.raises(ValueError, match="cannot freeze 'gate'"):
        frozen_names(nn.Linear(2, 2), ["gate"])


def test_tune_actions_refuses_a_bad_part_before_writing(tmp_path):
    checkpoint = save_checkpoint(_net(), tmp_path / "net.pt", SMALL_ENV)
    out = tmp_path / "out"
    script = [sys.executable, "examples/tune_actions.py", "--checkpoint", str(checkpoint), "--out", str(out)]
    done = run_script([*script, "--freeze", "heads"])
    assert done.returncode == 1 and "--freeze: unknown part to freeze 'heads'" in done.stderr
    assert not out.exists()
