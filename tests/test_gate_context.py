"""A gate that reads the arrival rate and ``log2 M`` beside the slot token (``gate_context``)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from mara_agents.mara.checkpoint import load_checkpoint, save_checkpoint
from mara_agents.mara.context_features import gate_load_inputs
from mara_agents.mara.numpy_actor import NumpySlotEncoder, NumpyTurnHead
from mara_agents.mara.slot_network import SlotMARANet
from mara_env.env import live_turns, raw_env
from mara_env.observation import GLOBAL_FEATURES
from tests.numpy_parity import torch_turn
from tests.test_mara_policy import _train_mara_config

RATE = GLOBAL_FEATURES.index("arrival_rate")
HINTED = {"planner_hints": True, "pick_hints": True, "uniform_pick": True}


def test_gate_load_inputs_scale_the_rate_cap_a_burst_and_read_the_size():
    globals_ = torch.zeros((3, len(GLOBAL_FEATURES)))
    globals_[:, RATE] = torch.tensor([0.05, 0.1, 1.5])  # one slot's burst of 3 arrivals per node: capped
    inputs = gate_load_inputs(globals_, torch.tensor([8.0, 64.0, 2.0]))
    expected = torch.tensor([[1.0, 3 / 6], [2.0, 6 / 6], [5.0, 1 / 6]])
    torch.testing.assert_close(inputs, expected)


def _hinted_env() -> raw_env:
    """An env with forecasts (the hints need them), idled until a task holds a row."""
    env = raw_env(num_nodes=6, max_tasks=12, forecaster="wls", horizon=60, load="heavy")
    env.reset(seed=3)
    while not env.observe(env.agent_selection)["action_mask"][1:].any():
        env.step(0)
    return env


def _net(gate_context: bool, seed: int = 0) -> SlotMARANet:
    """A small hinted slot actor whose gate is not constant (as a trained one is not)."""
    torch.manual_seed(seed)
    net = SlotMARANet(width=16, layers=1, heads=2, gate_context=gate_context, **HINTED).eval()
    with torch.no_grad():
        for parameter in net.gate.parameters():
            parameter.normal_()
    return net


@pytest.mark.parametrize("gate_context", [False, True])
def test_only_a_gate_context_gate_moves_with_the_rate_and_the_slot_token_does_not(gate_context):
    env = _hinted_env()
    vector = env.observe(env.agent_selection)["observation"]
    batch = torch.as_tensor(np.repeat(vector[None], 2, axis=0))
    batch[:, env.layout.slices["global"].start + RATE] = torch.tensor([0.03, 0.09])  # train-like, then extreme
    net = _net(gate_context)
    with torch.no_grad():
        encoding = net.encode(batch)
    torch.testing.assert_close(encoding.pooled[0], encoding.pooled[1])  # without load_signal the token is blind
    moved = not torch.allclose(encoding.gate[0], encoding.gate[1], rtol=0.0, atol=1e-6)
    assert moved is gate_context


def test_numpy_actor_follows_the_torch_actor_with_a_gate_context_gate():
    env = _hinted_env()
    net = _net(True, seed=1)
    encoder, head = NumpySlotEncoder(net), NumpyTurnHead(net)
    for turn, agent in enumerate(live_turns(env)):
        observation = env.observe(agent)
        vector, mask = observation["observation"], observation["action_mask"].astype(np.float32)
        encoding, expected = torch_turn(net, vector, mask)
        parts = encoder(vector)
        assert parts.gate == pytest.approx(float(encoding.gate[0, 0]), abs=1e-5)
        np.testing.assert_allclose(head.logits(parts, vector, mask), expected, rtol=1e-4, atol=1e-4)
        env.step(int(np.argmax(np.where(mask > 0, expected, -np.inf))))
        if turn == 60:
            break


def test_gate_context_needs_planner_hints():
    with pytest.raises(ValueError, match="gate_context needs planner_hints=True"):
        SlotMARANet(width=16, layers=1, heads=2, gate_context=True)


def test_a_gate_context_checkpoint_round_trips_and_an_old_config_reads_without_it(tmp_path):
    net = _net(True)
    loaded = load_checkpoint(save_checkpoint(net, tmp_path / "new.pt", {}))[0]
    assert loaded.config["gate_context"] and loaded.gate_hidden is not None
    torch.testing.assert_close(loaded.gate_hidden.weight, net.gate_hidden.weight)
    old = _net(False)
    path = save_checkpoint(old, tmp_path / "old.pt", {})
    blob = torch.load(path, weights_only=True)
    blob["config"] = {key: value for key, value in old.config.items() if key != "gate_context"}  # before the setting
    torch.save(blob, path)
    loaded_old = load_checkpoint(path)[0]
    assert loaded_old.config["gate_context"] is False and loaded_old.gate_hidden is None


def test_train_mara_gate_context_flag(monkeypatch):
    assert _train_mara_config(monkeypatch, "--generalist", "--gate-context").gate_context
    assert not _train_mara_config(monkeypatch, "--generalist").gate_context
    with pytest.raises(SystemExit, match="--gate-context .* needs the hinted slot actor"):
        _train_mara_config(monkeypatch, "--generalist", "--no-hints", "--gate-context")
