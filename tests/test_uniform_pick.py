"""The uniform pick: a third skip path that can replay ``uniform``, softmax-gated with srw's and edf's."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from mara_agents.heuristics import UniformScheduler
from mara_agents.mara.checkpoint import check_config, load_checkpoint, save_checkpoint
from mara_agents.mara.numpy_actor import NumpySlotEncoder, NumpyTurnHead, SlotParts
from mara_agents.mara.planner_picks import older_rows, uniform_picks
from mara_agents.mara.slot_network import SlotMARANet
from tests.numpy_parity import torch_turn
from tests.test_mara_policy import _train_mara_config
from tests.test_planner_hints import _pick_inputs, _srw_turns


def _net(**changes) -> SlotMARANet:
    return SlotMARANet(width=16, layers=1, heads=2, planner_hints=True, pick_hints=True, uniform_pick=True, **changes)


def test_older_rows_counts_the_present_rows_that_arrived_earlier():
    rows = torch.zeros(1, 5, 20)
    present, age = 0, 2  # ROW_FEATURES' first columns: present, slots_left, age
    rows[0, :, present] = torch.tensor([1.0, 1.0, 0.0, 1.0, 1.0])
    rows[0, :, age] = torch.tensor([0.3, 0.1, 0.9, 0.3, 0.0])  # row 2 is empty: its age counts for nothing
    assert older_rows(rows)[0].tolist() == [0.0, 2.0, 0.0, 0.0, 3.0]


def test_the_uniform_pick_is_uniforms_own_action():
    """At every turn of a uniform episode the pick is the row uniform chose, in torch and in numpy."""
    net = _net().eval()
    turns = list(_srw_turns(slots=20, scheduler=UniformScheduler()))
    encoder = NumpySlotEncoder(net)
    for observation, action in turns:
        vector, mask = observation["observation"], observation["action_mask"].astype(np.float32)
        with torch.no_grad():
            encoding = net.encode(torch.as_tensor(vector)[None])
        np.testing.assert_array_equal(encoder(vector).older, encoding.older[0].numpy())
        taken, _, own, _, _, allowed = _pick_inputs(net, vector, mask)
        as_tensors = (torch.from_numpy(np.asarray(a))[None] for a in (taken, own))
        pick = uniform_picks(*as_tensors, encoding.older, torch.from_numpy(allowed)[None])[0].numpy()
        assert pick.sum() == (action > 0) and (action == 0 or pick[action - 1] == 1.0)
    assert sum(action > 0 for _, action in turns) > len(turns) // 2


def test_the_uniform_path_alone_plays_uniform():
    net = _net().eval()
    with torch.no_grad():
        net.row_score.weight.zero_()
        net.idle_score.weight.zero_()
        net.gate.bias.copy_(torch.tensor([-40.0, 40.0]))  # srw, uniform logits against edf's 0
    encoder, head = NumpySlotEncoder(net), NumpyTurnHead(net)
    for observation, action in _srw_turns(slots=20, scheduler=UniformScheduler()):
        vector, mask = observation["observation"], observation["action_mask"].astype(np.float32)
        parts = encoder(vector)
        assert parts.uniform_gate > 0.999 and parts.gate < 1e-6
        assert int(np.argmax(head.logits(parts, vector, mask))) == action


def test_numpy_and_torch_give_the_same_logits_with_the_uniform_pick():
    torch.manual_seed(4)
    net = _net().eval()
    with torch.no_grad():
        net.gate.weight.normal_(std=0.1)  # all three paths weigh in
        net.uniform_skip.fill_(2.0)
        net.uniform_idle.fill_(0.7)
    encoder, head = NumpySlotEncoder(net), NumpyTurnHead(net)
    gates = []
    for observation, _ in list(_srw_turns(slots=20, scheduler=UniformScheduler()))[::3]:
        vector, mask = observation["observation"], observation["action_mask"].astype(np.float32)
        encoding, expected = torch_turn(net, vector, mask)
        parts = encoder(vector)
        gates.append((parts.gate, parts.uniform_gate))
        np.testing.assert_allclose(head.logits(parts, vector, mask), expected, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(head.logits(SlotParts.from_encoding(encoding), vector, mask), expected, atol=1e-5)
    srw, uniform = np.array(gates).T
    assert min(srw.mean(), uniform.mean(), (1 - srw - uniform).mean()) > 0.05


def test_the_uniform_pick_needs_the_pick_hints_and_round_trips(tmp_path):
    with pytest.raises(ValueError, match="uniform_pick needs pick_hints=True"):
        SlotMARANet(planner_hints=True, uniform_pick=True)
    net = _net()
    loaded, _, _ = load_checkpoint(save_checkpoint(net, tmp_path / "uniform.pt", {"forecaster": "wls"}))
    assert loaded.config["uniform_pick"] is True and float(loaded.uniform_skip.detach()[0]) == 5.0
    older = {"history_window": 8, "width": 16, "layers": 1, "heads": 2, "architecture": "slot"}
    assert check_config(older, tmp_path / "old.pt")["uniform_pick"] is False  # written before the flag
    with pytest.raises(ValueError, match="uniform_pick is a setting of the slot actor only"):
        check_config({**older, "architecture": "joint", "uniform_pick": True}, tmp_path / "joint.pt")


def test_train_mara_sets_the_uniform_pick_only_where_it_can_work(monkeypatch):
    assert _train_mara_config(monkeypatch, "--generalist").uniform_pick is True  # the default run's
    assert _train_mara_config(monkeypatch, "--generalist", "--no-uniform-pick").uniform_pick is False
    assert _train_mara_config(monkeypatch, "--generalist", "--no-pick-hints").uniform_pick is False
    assert _train_mara_config(monkeypatch).uniform_pick is False
    for argv in (["--uniform-pick"], ["--generalist", "--no-pick-hints", "--uniform-pick"]):
        with pytest.raises(SystemExit, match="--uniform-pick needs --generalist with its pick hints"):
            _train_mara_config(monkeypatch, *argv)
