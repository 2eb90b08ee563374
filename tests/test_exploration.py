"""PPO rollouts that sample only some node turns (``explore_nodes``): the chance per turn, the actions
chosen, the actor loss that learns from the sampled turns alone, and the checks of the setting."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from mara_agents.mara.advantages import RunningMeanStd
from mara_agents.mara.exploration import (
    check_explore_nodes,
    choose_actions,
    explore_mask,
    explore_probability,
    masked_mean,
    normalised_advantages,
)
from mara_agents.mara.ppo import PPOConfig, _update, build_network, make_pool
from mara_agents.mara.rollout import collect_rollout, masked_logits
from mara_agents.mara.slot_network import SlotMARANet
from tests.test_guide_where_trailing import _batch, _updated
from tests.test_mara_policy import _train_mara_config


def test_the_chance_to_sample_is_n_over_m_at_most_one():
    np.testing.assert_allclose(explore_probability(4, [2, 4, 8, 64]), [1.0, 1.0, 0.5, 0.0625])
    np.testing.assert_allclose(explore_probability(None, [2, 64]), [1.0, 1.0])


def test_the_mask_samples_about_n_turns_per_slot_and_none_keeps_the_random_stream():
    rng = np.random.default_rng(0)
    share = explore_mask(4, np.full(64_000, 64), rng).mean()
    assert share == pytest.approx(4 / 64, abs=0.005)  # binomial sd 0.001
    rng, fresh = np.random.default_rng(1), np.random.default_rng(1)
    assert explore_mask(None, [8, 64], rng).tolist() == [True, True]
    assert rng.random() == fresh.random()  # nothing was drawn


def test_greedy_turns_play_the_most_likely_action_and_sampled_turns_sample():
    torch.manual_seed(0)
    dist = torch.distributions.Categorical(probs=torch.tensor([[0.2, 0.5, 0.3]]).repeat(400, 1))
    greedy = choose_actions(dist, np.zeros(400, dtype=bool))
    assert greedy.tolist() == [1] * 400
    sampled = choose_actions(dist, np.ones(400, dtype=bool))
    shares = np.bincount(sampled.numpy(), minlength=3) / 400
    np.testing.assert_allclose(shares, [0.2, 0.5, 0.3], atol=0.08)
    mixed = choose_actions(dist, np.arange(400) % 2 == 0)
    assert mixed[1::2].tolist() == [1] * 200 and len(set(mixed[::2].tolist())) == 3


def test_masked_means_and_advantages_use_the_sampled_turns_only():
    values, explored = torch.tensor([1.0, 2.0, 10.0, 4.0]), torch.tensor([1.0, 1.0, 0.0, 1.0])
    assert float(masked_mean(values, explored)) == pytest.approx(7.0 / 3.0)
    assert float(masked_mean(values, torch.zeros(4))) == 0.0  # no sampled turn: nothing to learn from
    adv = normalised_advantages(values, explored)
    chosen = adv[explored > 0]
    assert float(chosen.mean()) == pytest.approx(0.0, abs=1e-6) and float(chosen.std()) == pytest.approx(1.0)
    # the greedy turn is shifted and scaled with the others (mean 7/3, sd of 1, 2, 4)
    assert float(adv[2]) == pytest.approx((10.0 - 7.0 / 3.0) / float(torch.tensor([1.0, 2.0, 4.0]).std()))
    assert torch.equal(normalised_advantages(torch.tensor([3.0]), torch.tensor([1.0])), torch.tensor([0.0]))


def _updated_with(explored: np.ndarray, advantages: np.ndarray) -> list[torch.Tensor]:
    """Network parameters after one PPO epoch on the shared test batch with these turns sampled."""
    torch.manual_seed(0)
    net = SlotMARANet(width=32, layers=1, planner_hints=True, pick_hints=True)
    optimiser = torch.optim.Adam(net.parameters(), lr=1e-2)
    batch = {**_batch(), "explored": explored.astype(np.float32), "advantages": advantages}
    torch.manual_seed(1)  # the same minibatches
    config = PPOConfig(epochs=1, minibatches=2, explore_nodes=2)
    _update(net, optimiser, batch, config, 16, 8, RunningMeanStd(), 0.0)
    return [p.detach().clone() for p in net.parameters()]


def test_the_actor_ignores_the_advantages_of_greedy_turns():
    batch = _batch()
    n = len(batch["actions"])
    explored = np.arange(n) % 3 == 0
    other = batch["advantages"].copy()
    other[~explored] = 100.0 * np.random.default_rng(5).normal(size=(~explored).sum())
    for a, b in zip(_updated_with(explored, batch["advantages"]), _updated_with(explored, other)):
        torch.testing.assert_close(a, b)
    # while those of sampled turns move it
    changed = batch["advantages"].copy()
    changed[explored] = -changed[explored]
    moved = [
        not torch.allclose(a, b)
        for a, b in zip(_updated_with(explored, batch["advantages"]), _updated_with(explored, changed))
    ]
    assert any(moved)


def test_every_turn_sampled_is_the_plain_ppo_update():
    n = len(_batch()["actions"])
    for a, b in zip(_updated_with(np.ones(n, dtype=bool), _batch()["advantages"]), _updated(0.0)):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


def test_a_rollout_samples_the_share_it_is_told(tmp_path):
    env = {"num_nodes": 8, "max_tasks": 8, "horizon": 40, "forecaster": "wls", "curve_split": "train", "shaping": True}
    config = PPOConfig(num_envs=2, processes=1, rollout_turns=200, teacher=None, explore_nodes=2, env=env)
    torch.manual_seed(0)
    net = build_network(config)
    pool = make_pool(config)
    try:
        batch, _ = collect_rollout(
            net, pool, pool.observe(), config, 8, 8, RunningMeanStd(), np.random.default_rng(0), [], None
        )
    finally:
        pool.close()
    assert batch["explored"].mean() == pytest.approx(2 / 8, abs=0.07)  # 400 turns: binomial sd 0.022
    assert batch["nodes"].tolist() == [8] * 400  # each turn's M, for a guide floor held on big clusters
    greedy = batch["explored"] == 0
    obs, masks = (torch.as_tensor(batch[key][greedy]) for key in ("obs", "masks"))
    with torch.no_grad():  # greedy turns took the most likely allowed action
        best = masked_logits(net, obs, masks, 8).argmax(-1)
    assert best.tolist() == batch["actions"][greedy].tolist()


def test_the_setting_is_checked(monkeypatch):
    check_explore_nodes(None)
    check_explore_nodes(4)
    for bad in (0, -1.0, float("nan"), float("inf"), True, "4"):
        with pytest.raises(ValueError, match="explore_nodes must be"):
            check_explore_nodes(bad)
    assert _train_mara_config(monkeypatch, "--generalist", "--explore-nodes", "4").explore_nodes == 4.0
    assert _train_mara_config(monkeypatch, "--generalist").explore_nodes is None
    with pytest.raises(SystemExit, match=r"--explore-nodes: explore_nodes must be a finite number > 0 .*got 0.0"):
        _train_mara_config(monkeypatch, "--explore-nodes", "0")
