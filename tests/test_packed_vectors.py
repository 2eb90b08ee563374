"""Packed vectors: only the rows in use are stored, and any selection comes back exactly as padded."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import mara_env
from mara_agents.mara.imitation import collect_demonstrations, play_teacher_episode
from mara_agents.mara.packed_vectors import PackedVectors
from mara_agents.mara.row_buckets import rows_needed
from mara_agents.mara.scenarios import Padding, ScenarioSampler
from mara_env.env import live_turns
from mara_env.observation import ROW_FEATURES, layout_of


def _padded(turns: int = 150, num_nodes: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """Observations and states of a 3-node (``num_nodes``), 6-row env padded to 32 rows and 8 nodes
    (from its 50th turn on, the tasks' first arrivals come about then: tables from empty to 4+ rows)."""
    env = mara_env.raw_env(num_nodes=num_nodes, max_tasks=6, forecaster="wls", load="extreme", horizon=100)
    env.reset(seed=2)
    padding = Padding(max_tasks=32, max_nodes=8)
    obs, states = [], []
    for _, agent in zip(range(turns), live_turns(env)):
        obs.append(padding.observation(env.observe(agent))["observation"])
        states.append(padding.state(env.state()))
        env.step(int(np.flatnonzero(env.observe(agent)["action_mask"])[-1]))
    return np.stack(obs[50:]), np.stack(states[50:])


def test_packing_stores_only_rows_in_use_and_unpacks_exactly():
    obs, states = _padded()
    for vectors, state in ((obs, False), (states, True)):
        packed = PackedVectors.pack(vectors, state=state)
        layout = layout_of(vectors[0], state=state)
        assert packed.rows_in_use.tolist() == layout.rows_in_use(vectors, state).tolist()
        assert len(packed.rows) == packed.rows_in_use.sum() <= 6 * len(vectors)  # at most the env's 6 rows each
        assert packed.nbytes < vectors.nbytes / 3  # 32 padded rows, at most 6 used
        np.testing.assert_array_equal(packed.full(), vectors)


def test_rows_needed_reads_packed_vectors_as_padded_ones():
    obs, states = _padded()
    packed = rows_needed(PackedVectors.pack(obs), PackedVectors.pack(states, state=True))
    assert packed.tolist() == rows_needed(obs, states).tolist() and packed.max() >= 4


def test_a_batch_cut_to_fewer_rows_is_the_trimmed_padded_batch():
    obs, states = _padded()
    for vectors, state in ((obs, False), (states, True)):
        packed = PackedVectors.pack(vectors, state=state)
        layout = layout_of(vectors[0], state=state)
        index = torch.tensor([5, 0, int(np.argmax(packed.rows_in_use)), 17, 17, 29])
        rows = int(packed.rows_in_use[index.numpy()].max())
        assert rows >= 4
        expected = layout.trimmed(torch.as_tensor(vectors[index.numpy()]), rows, state=state)
        assert torch.equal(packed.batch(index, rows), expected)
        with pytest.raises(ValueError, match="cannot trim"):
            packed.batch(index, rows - 1)


def test_concatenated_parts_keep_their_order_and_an_empty_table_packs():
    obs, _ = _padded()
    empty = obs[:3].copy()
    layout = layout_of(empty[0])
    table = empty[:, layout.slices["table"]].reshape(3, layout.max_tasks, layout.row_size)
    table[..., ROW_FEATURES.index("present")] = 0.0
    empty[:, layout.slices["table"]] = table.reshape(3, -1)
    parts = [PackedVectors.pack(obs[:10]), PackedVectors.pack(empty), PackedVectors.pack(obs[10:])]
    whole = PackedVectors.concatenate(parts)
    assert parts == []  # released as they were copied
    assert whole.rows_in_use[10:13].tolist() == [0, 0, 0]
    np.testing.assert_array_equal(whole.full(), np.concatenate((obs[:10], empty, obs[10:])))
    with pytest.raises(ValueError, match="non-empty"):
        PackedVectors.pack(obs[:0])
    bigger = Padding(max_tasks=40, max_nodes=8).observation
    wider = np.stack([bigger({"observation": v, "action_mask": np.ones(33)})["observation"] for v in obs[:2]])
    with pytest.raises(ValueError, match="one padded shape"):
        PackedVectors.concatenate([PackedVectors.pack(obs[:2]), PackedVectors.pack(wider)])
    with pytest.raises(ValueError, match="one padded shape"):
        PackedVectors.concatenate([])


def test_episodes_of_different_cluster_sizes_padded_alike_join():
    # an observation's layout names its cluster's node count, which its padded vector does not depend on:
    # a generalist's teacher episodes on 3 and 5 nodes must join (a 200-episode warm start failed on it)
    small, large = _padded(num_nodes=3), _padded(num_nodes=5)
    assert layout_of(small[0][0]) != layout_of(large[0][0])
    for which, state in ((0, False), (1, True)):
        whole = PackedVectors.concatenate(
            [PackedVectors.pack(small[which], state), PackedVectors.pack(large[which], state)]
        )
        np.testing.assert_array_equal(whole.full(), np.concatenate((small[which], large[which])))


def test_demonstrations_hold_the_teacher_episodes_padded_vectors():
    env = {"num_nodes": 3, "max_tasks": 6, "horizon": 40, "forecaster": "none"}
    demos = collect_demonstrations(env, "lara", [0, 1], processes=1, progress=False)
    episodes = [play_teacher_episode(env, "lara", seed) for seed in (0, 1)]
    np.testing.assert_array_equal(demos.obs.full(), np.concatenate([e[0] for e in episodes]))
    np.testing.assert_array_equal(demos.states.full(), np.concatenate([e[2] for e in episodes]))


def test_demonstrations_of_a_scenario_sampler_join_clusters_of_several_sizes():
    sampler = ScenarioSampler(
        nodes=(2, 6),
        max_tasks_cap=16,
        horizon=(20, 30),
        turns_per_episode=60,
        fixed={"shaping": True, "forecaster": "none", "curve_split": "train"},
    )
    demos = collect_demonstrations({}, "lara", [0, 1, 2, 3], processes=1, progress=False, scenarios=sampler)
    sizes = {layout_of(vector).num_nodes for vector in demos.obs.full()}
    assert len(sizes) > 1 and len(demos.obs) == len(demos.states) == len(demos.actions)
