"""A load signal grafted onto a trained slot actor: it plays and values as before until refitted."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from mara_agents.evaluation import play_episode
from mara_agents.mara.checkpoint import load_checkpoint, save_checkpoint
from mara_agents.mara.context_features import scaled_load
from mara_agents.mara.gate_dagger import GateLabels, fit_gate, gate_agreement
from mara_agents.mara.input_grafts import GATE_GRAFT_SCALE, graft_gate_context, graft_load_signal, with_zero_columns
from mara_agents.mara.network import GLOBAL_FEATURES
from mara_agents.mara.numpy_actor import NumpySlotEncoder, NumpyTurnHead
from mara_agents.mara.scheduler import MARAScheduler
from mara_agents.mara.slot_network import SlotMARANet
from mara_env.env import live_turns, raw_env
from tests.numpy_parity import torch_turn

ENV = {"num_nodes": 4, "max_tasks": 8, "horizon": 30, "workload": "synthetic", "load": "heavy", "forecaster": "wls"}


def _net() -> SlotMARANet:
    torch.manual_seed(0)
    return SlotMARANet(width=16, layers=1, heads=2, planner_hints=True, pick_hints=True, size_context=True)


def _turns() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    env = raw_env(**ENV)
    env.reset(seed=1)
    obs, masks, states = [], [], []
    for agent in live_turns(env):
        observation = env.observe(agent)
        obs.append(observation["observation"])
        masks.append(observation["action_mask"])
        states.append(env.state())
        env.step(0)
    return tuple(torch.as_tensor(np.stack(x), dtype=torch.float32) for x in (obs, masks, states))


def test_zero_columns_leave_the_output_alone():
    layer = torch.nn.Linear(3, 2)
    wider = with_zero_columns(layer, 1, 2)
    x = torch.tensor([[1.0, 2.0, 3.0]])
    assert torch.allclose(wider(torch.tensor([[1.0, 7.0, -5.0, 2.0, 3.0]])), layer(x))
    assert wider.weight.shape == (2, 5) and torch.equal(wider.weight[:, 1:3], torch.zeros(2, 2))


def test_the_graft_plays_and_values_as_the_original_and_reads_the_rate(tmp_path):
    net = _net()
    grafted = graft_load_signal(net)
    assert grafted.config["load_signal"] and not net.config["load_signal"]  # the original is unchanged
    obs, masks, states = _turns()
    rate = GLOBAL_FEATURES.index("arrival_rate")
    assert obs[:, rate].abs().max() > 0  # the turns carry a rate the graft now reads, at weight 0
    with torch.no_grad():
        torch.testing.assert_close(grafted.logits(obs, masks), net.logits(obs, masks))
        torch.testing.assert_close(grafted.value(states, 4, 8), net.value(states, 4, 8))
    # saved and loaded, it is a network built with the setting; it plays the original's episode (numpy actor)
    reloaded = load_checkpoint(save_checkpoint(grafted, tmp_path / "g.pt", ENV))[0]
    assert reloaded.config == grafted.config
    fresh = SlotMARANet(**{k: v for k, v in grafted.config.items() if k != "architecture"})
    assert {k: v.shape for k, v in fresh.state_dict().items()} == {k: v.shape for k, v in grafted.state_dict().items()}
    before = play_episode(raw_env(**ENV), MARAScheduler(net, trained_env=ENV), 2)
    after = play_episode(raw_env(**ENV), MARAScheduler(reloaded, trained_env=ENV), 2)
    assert after["completion_rate"] == before["completion_rate"] and after["return"] == before["return"]
    # a nonzero weight on the new column changes the encoding: the rate is really read
    with torch.no_grad():
        grafted.encoder.embed[0].weight[:, -2] = 1.0  # the rate's column, before log2 M
        assert not torch.allclose(grafted.logits(obs, masks), net.logits(obs, masks))


def test_a_network_with_the_signal_is_refused():
    with pytest.raises(ValueError, match="without the load signal"):
        graft_load_signal(SlotMARANet(width=16, layers=1, heads=2, load_signal=True))


def test_the_scaled_rate_is_read_alike_by_the_numpy_actor_and_moves_the_encoding():
    grafted = graft_load_signal(_net())
    assert grafted.config["load_scale"] and not graft_load_signal(_net(), scaled=False).config["load_scale"]
    with torch.no_grad():
        grafted.encoder.embed[0].weight[:, -2] = 0.5  # the rate's column, before log2 M
    obs, masks, _ = _turns()
    encoder, head = NumpySlotEncoder(grafted), NumpyTurnHead(grafted)
    for vector, mask in zip(obs.numpy()[:6], masks.numpy()[:6]):
        _, expected = torch_turn(grafted, vector, mask)
        np.testing.assert_allclose(head.logits(encoder(vector), vector, mask), expected, rtol=1e-4, atol=1e-4)
    context = torch.tensor([[0.3, 0.05], [0.3, 1.0]])  # the rate last: x 20, capped at 5
    torch.testing.assert_close(scaled_load(context), torch.tensor([[0.3, 1.0], [0.3, 5.0]]))
    with pytest.raises(ValueError, match="load_scale needs load_signal=True"):
        SlotMARANet(width=16, layers=1, heads=2, load_scale=True)


def test_the_gate_graft_carries_the_linear_gates_logits_through_tanh():
    net = _net()  # pick hints without the uniform path: one logit, srw's, against edf's 0
    with torch.no_grad():
        net.gate.weight.normal_(0.0, 1.0, generator=torch.Generator().manual_seed(1))
        net.gate.bias.fill_(0.5)
    before = torch.get_rng_state()
    grafted = graft_gate_context(net)
    assert torch.equal(torch.get_rng_state(), before)  # no draw from the global generator
    assert grafted.config["gate_context"] and not net.config["gate_context"]  # the original is unchanged
    tokens = torch.randn(50, 16, generator=torch.Generator().manual_seed(2))
    load = torch.rand(50, 2, generator=torch.Generator().manual_seed(3))  # rate and size: read at weight 0 so far
    with torch.no_grad():
        logit = net.gate(tokens)
        srw, _ = grafted.gate_weights(torch.cat([tokens, load], -1))
        expected = torch.sigmoid(torch.tanh(GATE_GRAFT_SCALE * logit) / GATE_GRAFT_SCALE)
        torch.testing.assert_close(srw, expected)
        assert (srw - torch.sigmoid(logit)).abs().max() < 1e-3  # logits of a few units: nearly the original's
    assert not torch.equal(grafted.gate_hidden.weight[1:], torch.zeros_like(grafted.gate_hidden.weight[1:]))
    assert torch.equal(grafted.gate.weight[:, 1:], torch.zeros_like(grafted.gate.weight[:, 1:]))  # free units, off
    again = graft_gate_context(net)  # the free units are drawn from the seed
    assert torch.equal(again.gate_hidden.weight, grafted.gate_hidden.weight)


def test_the_gate_graft_saves_as_a_gate_context_network_and_numpy_plays_it(tmp_path):
    grafted = graft_gate_context(_net())
    with torch.no_grad():
        grafted.gate.weight.fill_(0.3)  # every unit on, so the numpy actor's gate is checked in full
        grafted.row_skip.weight.fill_(1.0)
        grafted.edf_skip.weight.fill_(-1.0)
    reloaded = load_checkpoint(save_checkpoint(grafted, tmp_path / "g.pt", ENV))[0]
    fresh = SlotMARANet(**{k: v for k, v in grafted.config.items() if k != "architecture"})
    assert {k: v.shape for k, v in fresh.state_dict().items()} == {k: v.shape for k, v in reloaded.state_dict().items()}
    obs, masks, _ = _turns()
    encoder, head = NumpySlotEncoder(reloaded), NumpyTurnHead(reloaded)
    for vector, mask in zip(obs.numpy()[:6], masks.numpy()[:6]):
        _, expected = torch_turn(reloaded, vector, mask)
        np.testing.assert_allclose(head.logits(encoder(vector), vector, mask), expected, rtol=1e-4, atol=1e-4)


def test_a_fitted_gate_graft_follows_labels_no_linear_gate_can():
    # srw where exactly one of (rate high, cluster big) holds, edf elsewhere: an XOR of what only the
    # grafted gate reads; the linear gate does not read them at all
    rng = np.random.default_rng(0)
    tokens = rng.normal(size=(400, 16)).astype(np.float32)
    load = rng.random((400, 2)).astype(np.float32)
    srw = (load[:, 0] > 0.5) != (load[:, 1] > 0.5)
    counts = np.stack([srw, ~srw, np.zeros(400, bool)], 1).astype(np.float32)
    names, nodes = np.full(400, "synthetic"), np.full(400, 8)
    net = _net()
    linear = GateLabels(tokens, counts, names, nodes)
    fit_gate(net, linear, steps=300)
    grafted = graft_gate_context(_net())
    labels = GateLabels(np.concatenate([tokens, load], 1), counts, names, nodes)
    fit_gate(grafted, labels, steps=300)
    assert gate_agreement(net, linear) < 0.75 < 0.95 < gate_agreement(grafted, labels)


def test_the_gate_graft_is_refused_without_a_linear_gate():
    with pytest.raises(ValueError, match="planner hints, a linear gate"):
        graft_gate_context(SlotMARANet(width=16, layers=1, heads=2))
    with pytest.raises(ValueError, match="planner hints, a linear gate"):
        graft_gate_context(graft_gate_context(_net()))
