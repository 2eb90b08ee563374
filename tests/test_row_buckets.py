"""Row buckets: trimming padded vectors changes nothing, and bucketed batches cover every sample once."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import mara_env
from mara_agents.mara.advantages import RunningMeanStd
from mara_agents.mara.imitation import Demonstrations, clone
from mara_agents.mara.packed_vectors import PackedVectors
from mara_agents.mara.ppo import PPOConfig, _update
from mara_agents.mara.row_buckets import padded_logits, rows_needed, size_buckets, trim_batch
from mara_agents.mara.scenarios import Padding
from mara_agents.mara.slot_network import SlotMARANet
from mara_env.env import live_turns
from mara_env.observation import NODE_FEATURES, ROW_FEATURES, layout_of


def _padded_turns(turns: int = 40) -> tuple[np.ndarray, ...]:
    """Observations, masks, states and the acting agents' random actions of a 3-node, 6-row env with
    wls forecasts, padded to 16 rows and 8 nodes as generalist training pads them."""
    env = mara_env.raw_env(num_nodes=3, max_tasks=6, forecaster="wls", load="extreme", horizon=100)
    env.reset(seed=4)
    rng = np.random.default_rng(0)
    padding = Padding(max_tasks=16, max_nodes=8)
    obs, masks, states, actions = [], [], [], []
    for _, agent in zip(range(turns), live_turns(env)):
        observation = env.observe(agent)
        big = padding.observation(observation)
        obs.append(big["observation"])
        masks.append(big["action_mask"].astype(np.float32))
        states.append(padding.state(env.state()))
        actions.append(int(rng.choice(np.flatnonzero(observation["action_mask"]))))
        env.step(actions[-1])
    return np.stack(obs), np.stack(masks), np.stack(states), np.asarray(actions)


def test_rows_in_use_is_the_last_present_row_plus_one():
    layout = layout_of(_padded_turns(1)[0][0])
    vectors = np.zeros((3, layout.size), dtype=np.float32)
    table = vectors[:, layout.slices["table"]].reshape(3, layout.max_tasks, layout.row_size)
    present = ROW_FEATURES.index("present")
    table[0, [0, 4], present] = 1.0  # rows 0 and 4: five rows in use
    table[2, 15, present] = 1.0  # the last row
    vectors[:, layout.slices["table"]] = table.reshape(3, -1)
    assert layout.rows_in_use(vectors).tolist() == [5, 0, 16]


def test_trimming_undoes_padding():
    env = mara_env.raw_env(num_nodes=3, max_tasks=6, forecaster="wls", load="extreme", horizon=100)
    env.reset(seed=4)
    layout = layout_of(env.observe(next(live_turns(env)))["observation"])
    last_action = layout.slices["node"].start + NODE_FEATURES.index("last_action")
    for agent in live_turns(env):  # play on until the node trained a row last slot and 3+ rows are in use
        observation = env.observe(agent)["observation"]
        if observation[last_action] > 0 and layout.rows_in_use(observation) >= 3:
            break
        env.step(int(np.flatnonzero(env.observe(agent)["action_mask"])[-1]))
    big = Padding(max_tasks=16, max_nodes=8).observation({"observation": observation, "action_mask": np.ones(7)})
    back = layout_of(big["observation"]).trimmed(big["observation"][None], 6)[0]
    np.testing.assert_allclose(back, observation, rtol=1e-6)
    in_use = int(layout_of(big["observation"]).rows_in_use(big["observation"]))
    assert 3 <= in_use <= 6
    with pytest.raises(ValueError, match=f"row {in_use - 1} is present"):
        layout_of(big["observation"]).trimmed(big["observation"], in_use - 1)
    with pytest.raises(ValueError, match=r"in \[1, 16\]"):
        layout_of(big["observation"]).trimmed(big["observation"], 17)


def test_trimmed_batches_give_the_same_logits_and_values():
    torch.manual_seed(0)
    # train mode, as training runs it (dropout is 0); in eval mode torch's fast attention path gives the
    # critic NaN on a table with no present row, padded or trimmed alike, and only the actor is evaluated
    net = SlotMARANet(width=32, layers=1, planner_hints=True, pick_hints=True)
    obs, masks, states, _ = (torch.as_tensor(a) for a in _padded_turns())
    rows = int(rows_needed(obs.numpy(), states.numpy()).max())
    assert rows <= 6
    small = trim_batch(obs, masks, states, rows)
    with torch.no_grad():
        full, cut = net.logits(obs, masks), net.logits(small[0], small[1])
        torch.testing.assert_close(net.value(small[2]), net.value(states), rtol=1e-5, atol=1e-5)
    allowed = masks > 0.5
    torch.testing.assert_close(padded_logits(cut, 16, float("-inf"))[allowed], full[allowed], rtol=1e-5, atol=1e-5)
    assert (
        padded_logits(cut, 16, -1e9).shape == full.shape and (padded_logits(cut, 16, -1e9)[:, rows + 1 :] == -1e9).all()
    )


def test_size_buckets_cover_every_sample_once_in_batches_of_one_size():
    sizes = np.array([3, 90] * 32)
    batches = size_buckets(sizes, batch_size=8, generator=torch.Generator().manual_seed(1), pool_batches=8)
    covered = torch.cat(batches).sort().values
    assert covered.tolist() == list(range(64)) and all(len(b) == 8 for b in batches)
    assert all(len(set(sizes[b.numpy()])) == 1 for b in batches)  # one pool of all 64: sorted, cut by size
    again = size_buckets(sizes, batch_size=8, generator=torch.Generator().manual_seed(1), pool_batches=8)
    assert all(torch.equal(a, b) for a, b in zip(batches, again))
    with pytest.raises(ValueError, match="batch_size"):
        size_buckets(sizes, batch_size=0, generator=None)


def test_cloning_on_one_bucketed_batch_matches_the_padded_batch():
    obs, masks, states, actions = _padded_turns()
    returns = np.linspace(3.0, 0.0, len(actions))
    packed_obs, packed_states = PackedVectors.pack(obs), PackedVectors.pack(states, state=True)
    demos = Demonstrations(packed_obs, masks, packed_states, actions, returns, np.array([0.5]))
    results = []
    for buckets in (False, True):
        torch.manual_seed(0)
        net = SlotMARANet(width=32, layers=1, planner_hints=True, pick_hints=True)
        results.append(clone(net, demos, 8, 16, epochs=2, batch_size=64, progress=False, row_buckets=buckets))
    for key in ("bc_loss", "bc_accuracy", "value_loss"):
        assert results[1][key] == pytest.approx(results[0][key], rel=1e-4, abs=1e-6)


def test_a_ppo_update_on_one_bucketed_minibatch_matches_the_padded_one():
    obs, masks, states, actions = _padded_turns()
    n = len(actions)
    rng = np.random.default_rng(3)
    batch = {
        "obs": obs,
        "masks": masks,
        "states": states,
        "actions": actions,
        "labels": actions,
        "logprobs": np.full(n, -1.0),
        "values": rng.normal(size=n),
        "advantages": rng.normal(size=n),
        "returns": rng.normal(size=n),
    }
    results = []
    for buckets in (False, True):
        torch.manual_seed(0)
        net = SlotMARANet(width=32, layers=1, planner_hints=True, pick_hints=True)
        optimiser = torch.optim.Adam(net.parameters(), lr=1e-3)
        config = PPOConfig(epochs=1, minibatches=1, row_buckets=buckets)
        results.append(_update(net, optimiser, batch, config, 16, 8, RunningMeanStd(), guide=0.5))
    for key in ("policy_loss", "value_loss", "entropy", "approx_kl", "explained_variance", "teacher_agreement"):
        assert results[1][key] == pytest.approx(results[0][key], rel=1e-4, abs=1e-6), key
