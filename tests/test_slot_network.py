"""The slot-encoding MARA actor: one encoding per slot, a light per-turn head, the same logits."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import mara_agents
import mara_env
from mara_agents.mara.checkpoint import load_checkpoint, save_checkpoint
from mara_agents.mara.numpy_actor import NumpySlotEncoder, NumpyTurnHead, SlotParts
from mara_agents.mara.scheduler import MARAScheduler
from mara_agents.mara.slot_network import SlotMARANet
from mara_env.env import live_turns
from mara_env.observation import layout_of
from tests.numpy_parity import torch_turn


def _turns(num_nodes: int, max_tasks: int, slots: int, seed: int = 0):
    """Observations of every turn of a few slots, nodes spreading over the rows."""
    env = mara_env.raw_env(num_nodes=num_nodes, max_tasks=max_tasks, forecaster="none", horizon=60, load="heavy")
    env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    seen = []
    for agent in live_turns(env):
        observation = env.observe(agent)
        seen.append((env.sim.slot, observation))
        env.step(int(rng.choice(np.flatnonzero(observation["action_mask"]))))
        if env.sim.slot >= slots:
            break
    return seen


@pytest.fixture(scope="module")
def net() -> SlotMARANet:
    torch.manual_seed(0)
    return SlotMARANet(width=32, layers=1).eval()


def test_numpy_actor_matches_the_torch_actor(net):
    encoder, head = NumpySlotEncoder(net), NumpyTurnHead(net)
    for _, observation in _turns(4, 8, slots=30)[::3]:
        vector = observation["observation"]
        mask = observation["action_mask"].astype(np.float32)
        encoding, expected = torch_turn(net, vector, mask)
        np.testing.assert_allclose(head.logits(encoder(vector), vector, mask), expected, rtol=1e-4, atol=1e-4)
        # the head alone, on the torch encoding's parts
        parts = SlotParts.from_encoding(encoding)
        np.testing.assert_allclose(head.logits(parts, vector, mask), expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("layers", [1, 2])
def test_numpy_encoder_gives_the_torch_encoding_on_present_rows(layers):
    torch.manual_seed(layers)
    two_layers = SlotMARANet(width=32, layers=layers, heads=4).eval()
    encoder = NumpySlotEncoder(two_layers)
    seen_empty = seen_full = False
    for _, observation in _turns(4, 8, slots=30)[::2]:
        vector = observation["observation"]
        present = layout_of(vector).split_observation(vector)[2][:, 0] > 0.5
        seen_empty |= not present.any()
        seen_full |= present.sum() >= 3
        with torch.no_grad():
            expected = SlotParts.from_encoding(two_layers.encode(torch.as_tensor(vector)[None]))
        got = encoder(vector)
        np.testing.assert_allclose(got.pooled, expected.pooled, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(got.projected[present], expected.projected[present], rtol=1e-4, atol=1e-5)
        assert not got.projected[~present].any()  # empty rows are left out of the transformer
    assert seen_empty and seen_full  # both an empty table (the first slot) and a filled one were checked


def test_numpy_encoder_refuses_a_layer_kind_it_does_not_compute():
    net = SlotMARANet(width=16, layers=1, heads=2)
    net.encoder.mixer.layers[0].norm_first = True
    with pytest.raises(ValueError, match="post-norm ReLU"):
        NumpySlotEncoder(net)


def test_every_node_of_a_slot_shares_one_encoding(net):
    by_slot: dict[int, list[np.ndarray]] = {}
    for slot, observation in _turns(4, 8, slots=20):
        by_slot.setdefault(slot, []).append(observation["observation"])
    for vectors in by_slot.values():
        parts = [layout_of(v).slot_part(v) for v in vectors]
        assert all(np.array_equal(parts[0], p) for p in parts[1:])
        present = torch.as_tensor(layout_of(vectors[0]).split_observation(vectors[0])[2][:, 0] > 0.5)
        with torch.no_grad():
            codes = [net.encode(torch.as_tensor(v)[None]) for v in vectors]
        assert all(torch.allclose(codes[0].pooled, c.pooled, atol=1e-6) for c in codes[1:])
        rows = [c.projected[0, present] for c in codes]  # empty rows are masked out of everything
        assert all(torch.allclose(rows[0], r, atol=1e-6) for r in rows[1:])


def test_cached_scheduler_plays_what_the_uncached_network_plays(net):
    scheduler = MARAScheduler(net, trained_env={"forecaster": "none"})
    scheduler.reset(0)
    for _, observation in _turns(3, 6, slots=25):
        mask = torch.as_tensor(observation["action_mask"], dtype=torch.float32)[None]
        with torch.no_grad():
            fresh = net.logits(torch.as_tensor(observation["observation"])[None], mask)[0]
        assert scheduler.act(observation, "") == int(torch.argmax(fresh))


def test_the_same_weights_run_any_cluster_size(net):
    scheduler = MARAScheduler(net, trained_env={"forecaster": "none"})
    for nodes, rows in ((2, 4), (16, 40)):
        record = mara_agents.evaluate(scheduler, [1], num_nodes=nodes, max_tasks=rows, horizon=30)[0]
        assert record["completed"] + record["expired"] + record["live"] == record["arrived"]


def test_slot_checkpoint_round_trip(tmp_path, net):
    path = save_checkpoint(net, tmp_path / "slot.pt", {"forecaster": "none"})
    loaded, env, _ = load_checkpoint(path)
    assert isinstance(loaded, SlotMARANet) and env == {"forecaster": "none"}
    for (name, a), b in zip(net.state_dict().items(), loaded.state_dict().values()):
        assert torch.equal(a, b), name
    assert MARAScheduler(path).requirements.forecaster == "none"


def test_training_gradients_reach_the_encoder_and_the_head(net):
    trainable = SlotMARANet(width=16, layers=1)
    _, observation = _turns(2, 4, slots=10)[-1]
    batch = torch.as_tensor(observation["observation"])[None].repeat(3, 1)
    mask = torch.ones(3, 5)
    trainable.logits(batch, mask).logsumexp(-1).sum().backward()
    assert trainable.encoder.embed[0].weight.grad.abs().sum() > 0
    assert trainable.turn_hidden.weight.grad.abs().sum() > 0


def test_a_slot_without_tasks_idles_with_finite_logits(net):
    env = mara_env.raw_env(num_nodes=2, max_tasks=4, forecaster="none")
    env.reset(seed=2)  # no task has arrived at slot 0 with this seed
    observation = env.observe("node_0")
    assert observation["action_mask"].tolist() == [1, 0, 0, 0, 0]
    scheduler = MARAScheduler(net, trained_env={"forecaster": "none"})
    logits = scheduler._slot_logits(observation["observation"], observation["action_mask"].astype(np.float32))
    assert np.isfinite(float(logits[0])) and scheduler.act(observation, "node_0") == 0
