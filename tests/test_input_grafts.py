"""A load signal grafted onto a trained slot actor: it plays and values as before until refitted."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from mara_agents.evaluation import play_episode
from mara_agents.mara.checkpoint import load_checkpoint, save_checkpoint
from mara_agents.mara.context_features import scaled_load
from mara_agents.mara.input_grafts import graft_load_signal, with_zero_columns
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
