"""The size context: ``log2 M / 6`` in the slot's context, so the encoder can tell cluster sizes apart."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from mara_agents.mara.checkpoint import check_config, load_checkpoint, save_checkpoint
from mara_agents.mara.context_features import size_feature
from mara_agents.mara.slot_network import NUM_NODES, SlotMARANet
from tests.test_mara_policy import _train_mara_config
from tests.test_planner_hints import _srw_turns, assert_numpy_matches_torch


def _net(size_context: bool) -> SlotMARANet:
    torch.manual_seed(5)
    hints = {"planner_hints": True, "pick_hints": True, "uniform_pick": True}
    return SlotMARANet(width=16, layers=1, heads=2, size_context=size_context, **hints).eval()


def _with_nodes(vector: np.ndarray, nodes: int) -> np.ndarray:
    """A copy of the observation with another ``M`` in its header and nothing else changed."""
    changed = vector.copy()
    changed[NUM_NODES] = nodes
    return changed


def test_size_feature_is_log2_m_over_six():
    assert size_feature(torch.tensor([1.0, 2.0, 8.0, 64.0])).tolist() == pytest.approx([0.0, 1 / 6, 0.5, 1.0])
    assert size_feature(torch.tensor([0.0])).item() == 0.0  # clamped: no log of zero


def test_only_a_network_with_the_size_context_reads_the_cluster_size():
    observation, _ = list(_srw_turns(slots=10))[-1]  # a slot with tasks in the table
    vector = observation["observation"]
    for size_context, differs in ((True, True), (False, False)):
        net = _net(size_context)
        with torch.no_grad():
            pooled = [net.encode(torch.as_tensor(_with_nodes(vector, m))[None]).pooled for m in (4, 64)]
        assert (not torch.allclose(*pooled)) is differs


def test_numpy_and_torch_give_the_same_logits_with_the_size_context():
    assert assert_numpy_matches_torch(_net(True))  # turns were checked


def test_the_size_context_round_trips_and_old_checkpoints_lack_it(tmp_path):
    loaded, _, _ = load_checkpoint(save_checkpoint(_net(True), tmp_path / "sized.pt", {"forecaster": "wls"}))
    assert loaded.config["size_context"] is True
    older = {"history_window": 8, "width": 16, "layers": 1, "heads": 2, "architecture": "slot"}
    assert check_config(older, tmp_path / "old.pt")["size_context"] is False  # written before the flag
    with pytest.raises(ValueError, match="size_context is a setting of the slot actor only"):
        check_config({**older, "architecture": "joint", "size_context": True}, tmp_path / "joint.pt")


def test_train_mara_sets_the_size_context_only_on_the_slot_actor(monkeypatch):
    assert _train_mara_config(monkeypatch, "--generalist", "--size-context").size_context is True
    assert _train_mara_config(monkeypatch, "--generalist").size_context is True  # on for the generalist's slot actor
    assert _train_mara_config(monkeypatch, "--generalist", "--architecture", "joint").size_context is False
    assert _train_mara_config(monkeypatch, "--generalist", "--no-size-context").size_context is False
    assert _train_mara_config(monkeypatch, "--architecture", "slot", "--size-context").size_context is True
    assert _train_mara_config(monkeypatch).size_context is False
    for argv in (["--size-context"], ["--generalist", "--architecture", "joint", "--size-context"]):
        with pytest.raises(SystemExit, match="--size-context is a setting of the slot actor"):
            _train_mara_config(monkeypatch, *argv)
