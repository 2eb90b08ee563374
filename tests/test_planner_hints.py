"""Planner hints: the srw plan and the deadline order as row features, enough to replay srw or edf exactly."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import mara_env
from mara_agents.heuristics import EDFScheduler
from mara_agents.mara.checkpoint import check_config, load_checkpoint, save_checkpoint
from mara_agents.mara.hints import planner_hints
from mara_agents.mara.numpy_actor import (
    NumpySlotEncoder,
    NumpyTurnHead,
    SlotParts,
    numpy_planner_picks,
    rows_due_earlier,
)
from mara_agents.mara.planner_picks import planner_picks
from mara_agents.mara.slot_network import SlotMARANet
from mara_agents.srw import SRWScheduler
from mara_env.env import live_turns
from mara_env.observation import decode
from tests.numpy_parity import torch_turn


def _srw_turns(slots: int = 25, seed: int = 3, scheduler=None):
    """(observation, action) for every turn of an episode that srw (or ``scheduler``) plays."""
    env = mara_env.raw_env(num_nodes=6, max_tasks=12, forecaster="wls", horizon=60, load="heavy")
    env.reset(seed=seed)
    player = scheduler or SRWScheduler()
    player.reset(seed)
    for agent in live_turns(env):
        observation = env.observe(agent)
        action = player.act(observation, agent)
        yield observation, action
        env.step(action)
        if env.sim.slot >= slots:
            return


def _replay(vector: np.ndarray, mask: np.ndarray, hints: np.ndarray) -> int:
    """srw's rule read off the hints: stay on the own row while the plan wants nodes there, else the
    best-ranked row the plan still wants, else idle."""
    obs = decode(vector)
    wanted = (hints[:, 0] - obs.row("chosen_now")) > 1e-6
    allowed = mask[1:] > 0
    if obs.last_row >= 0 and wanted[obs.last_row] and allowed[obs.last_row]:
        return obs.last_row + 1
    candidates = np.flatnonzero(wanted & allowed & (hints[:, 1] > 0))
    if candidates.size == 0:
        return 0
    return int(candidates[np.argmax(hints[candidates, 1])]) + 1


def test_hints_carry_every_srw_decision():
    turns = list(_srw_turns())
    assert len(turns) > 100
    vectors = np.stack([observation["observation"] for observation, _ in turns])
    hints = planner_hints(vectors)
    replayed = [_replay(v, o["action_mask"], h) for v, (o, _), h in zip(vectors, turns, hints)]
    actions = [action for _, action in turns]
    assert replayed == actions
    assert sum(a > 0 for a in actions) > len(actions) // 2  # srw trained rows, not only idled


def test_hints_are_the_same_for_every_node_of_a_slot():
    turns = list(_srw_turns(slots=10))
    by_time: dict[float, list[np.ndarray]] = {}
    for observation, _ in turns:
        by_time.setdefault(decode(observation["observation"]).globals["time"], []).append(observation["observation"])
    for vectors in by_time.values():
        hints = planner_hints(np.stack(vectors))
        np.testing.assert_array_equal(hints, np.broadcast_to(hints[0], hints.shape))


def test_hints_refuse_observations_without_forecasts():
    env = mara_env.raw_env(num_nodes=2, max_tasks=4, forecaster="none", horizon=20)
    env.reset(seed=0)
    vector = env.observe(env.agent_selection)["observation"]
    with pytest.raises(ValueError, match="forecast features"):
        planner_hints(vector[None])


@pytest.mark.parametrize("pick_hints", [False, True])
def test_numpy_head_matches_the_torch_head_with_hints(pick_hints):
    torch.manual_seed(1)
    net = SlotMARANet(width=32, layers=1, planner_hints=True, pick_hints=pick_hints).eval()
    with torch.no_grad():  # the skip paths and the gate start at zero; give them weight so the test covers them
        for layer in (net.row_skip, net.edf_skip, net.gate):
            layer.weight.normal_()
        net.idle_skip.weight.fill_(0.7)
        net.edf_idle.fill_(-0.3)
    for encoding, mask in assert_numpy_matches_torch(net):
        assert encoding.plan_nodes.sum() > 0 or not mask[1:].any()


def assert_numpy_matches_torch(net: SlotMARANet) -> list[tuple]:
    """Check that the numpy encoder and head give the torch network's slot token and logits on turns of
    an srw episode; the turns' ``(torch encoding, action mask)``."""
    encoder, head = NumpySlotEncoder(net), NumpyTurnHead(net)
    checked = []
    for observation, _ in list(_srw_turns(slots=15))[::4]:
        vector, mask = observation["observation"], observation["action_mask"].astype(np.float32)
        encoding, expected = torch_turn(net, vector, mask)
        np.testing.assert_allclose(encoder(vector).pooled, encoding.pooled[0].numpy(), atol=1e-5)
        np.testing.assert_allclose(head.logits(encoder(vector), vector, mask), expected, rtol=1e-4, atol=1e-4)
        checked.append((encoding, mask))
    return checked


def test_a_hinted_checkpoint_round_trips_and_the_joint_actor_refuses_hints(tmp_path):
    net = SlotMARANet(width=16, layers=1, heads=2, planner_hints=True)
    path = save_checkpoint(net, tmp_path / "hinted.pt", {"forecaster": "wls"})
    loaded, _, _ = load_checkpoint(path)
    assert loaded.config["planner_hints"] is True
    for name, tensor in net.state_dict().items():
        torch.testing.assert_close(loaded.state_dict()[name], tensor)
    config = {"history_window": 8, "width": 16, "layers": 1, "heads": 2, "planner_hints": True}
    with pytest.raises(ValueError, match="slot actor only"):
        check_config(config, tmp_path / "joint.pt")
    with pytest.raises(ValueError, match="planner_hints must be True or False"):
        check_config({**config, "architecture": "slot", "planner_hints": 1}, tmp_path / "slot.pt")


def _hand_set(gate_bias: float) -> SlotMARANet:
    """A hinted actor at its rule start (SlotMARANet.start_at_rules) with the tanh paths off: the srw
    path scores staying on the own row 10 + 5 + 3 rank, another wanted row 10 + 3 rank, idle 5 - 10
    while the plan wants a node and 5 after; the edf path scores a row -10 per node already on it + 3
    deadline rank + 0.01 if it is the own row, and idles at 5 - 100. The gate's bias picks the path."""
    net = SlotMARANet(width=16, layers=1, heads=2, planner_hints=True).eval()
    net.start_at_rules()
    with torch.no_grad():
        net.row_score.weight.zero_()
        net.idle_score.weight.zero_()
        net.gate.bias.fill_(gate_bias)
    return net


@pytest.mark.parametrize("teacher", ["srw", "edf"])
def test_the_skip_paths_alone_can_play_srw_or_edf(teacher):
    net = _hand_set(40.0 if teacher == "srw" else -40.0)
    encoder, head = NumpySlotEncoder(net), NumpyTurnHead(net)
    turns = list(_srw_turns(slots=20, scheduler=SRWScheduler() if teacher == "srw" else EDFScheduler()))
    for observation, action in turns:
        vector, mask = observation["observation"], observation["action_mask"].astype(np.float32)
        assert int(np.argmax(head.logits(encoder(vector), vector, mask))) == action


def test_the_rule_start_needs_the_hints():
    with pytest.raises(ValueError, match="planner_hints=True"):
        SlotMARANet(width=16, layers=1, heads=2).start_at_rules()


def _pick_inputs(net: SlotMARANet, vector: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, ...]:
    """The rows' (taken, deadline rank, own row, plan still wants it, plan rank, allowed) at this turn."""
    with torch.no_grad():
        encoding = net.encode(torch.as_tensor(vector)[None])
    parts = SlotParts.from_encoding(encoding)
    plan_nodes, plan_rank, deadline_rank = parts.plan_nodes, parts.plan_rank, parts.deadline_rank
    obs = decode(vector)
    taken = np.round(obs.row("chosen_now") * obs.layout.num_nodes).astype(np.float32)
    own = np.zeros(obs.layout.max_tasks, dtype=np.float32)
    if obs.last_row >= 0:
        own[obs.last_row] = 1.0
    wanted = (plan_nodes - taken > 0.5).astype(np.float32)
    return taken, deadline_rank, own, wanted, plan_rank, mask[1:] > 0.5


@pytest.mark.parametrize("teacher", ["srw", "edf"])
def test_pick_hints_are_the_planners_own_actions(teacher):
    """At every turn of an srw (edf) episode the srw (edf) pick is the row it chose, none where it idled,
    in numpy and in torch alike: one feature carries the planner's whole decision, at any K."""
    net = SlotMARANet(width=16, layers=1, heads=2, planner_hints=True, pick_hints=True).eval()
    turns = list(_srw_turns(slots=20, scheduler=SRWScheduler() if teacher == "srw" else EDFScheduler()))
    which = 0 if teacher == "srw" else 1
    for observation, action in turns:
        inputs = _pick_inputs(net, observation["observation"], observation["action_mask"].astype(np.float32))
        taken, deadline_rank, *rest = inputs
        pick = numpy_planner_picks(taken, rows_due_earlier(deadline_rank), *rest)[which]  # a row index, -1: idle
        one_hot = planner_picks(*(torch.from_numpy(np.asarray(a))[None] for a in inputs))[which][0].numpy()
        assert (int(np.argmax(one_hot)) if one_hot.any() else -1) == pick
        assert one_hot.sum() == (pick >= 0)
        assert pick + 1 == action
    assert sum(action > 0 for _, action in turns) > len(turns) // 2


@pytest.mark.parametrize("teacher", ["srw", "edf"])
def test_the_numpy_head_adds_the_pick_weights_at_the_reference_picks(teacher):
    """The turn head computes the picks' keys inline, on the allowed rows only: turning the two pick
    weights on must move exactly the scores of the rows numpy_planner_picks names, by gate x weight."""
    torch.manual_seed(2)
    net = SlotMARANet(width=16, layers=1, heads=2, planner_hints=True, pick_hints=True).eval()
    with torch.no_grad():
        net.gate.weight.normal_()
        net.row_skip.weight[0, -1], net.edf_skip.weight[0, -1] = 0.0, 0.0
    encoder, without = NumpySlotEncoder(net), NumpyTurnHead(net)
    with torch.no_grad():
        net.row_skip.weight[0, -1], net.edf_skip.weight[0, -1] = 3.0, 5.0
    with_picks = NumpyTurnHead(net)
    turns = list(_srw_turns(slots=15, scheduler=SRWScheduler() if teacher == "srw" else EDFScheduler()))
    for observation, _ in turns[::3]:
        vector, mask = observation["observation"], observation["action_mask"].astype(np.float32)
        parts = encoder(vector)
        after, before = with_picks.logits(parts, vector, mask), without.logits(parts, vector, mask)
        assert np.array_equal(np.isfinite(after), mask > 0.5) and np.array_equal(np.isfinite(before), mask > 0.5)
        moved = np.where(mask > 0.5, after - np.where(mask > 0.5, before, 0.0), 0.0)
        taken, deadline_rank, *rest = _pick_inputs(net, vector, mask)
        srw, edf = numpy_planner_picks(taken, rows_due_earlier(deadline_rank), *rest)
        expected = np.zeros(mask.size - 1)
        if srw >= 0:
            expected[srw] += parts.gate * 3.0
        if edf >= 0:
            expected[edf] += (1.0 - parts.gate) * 5.0
        np.testing.assert_allclose(moved[1:], np.where(mask[1:] > 0.5, expected, 0.0), atol=1e-5)
        assert moved[0] == 0.0


def test_pick_hints_start_at_weight_and_need_the_planner_hints(tmp_path):
    net = SlotMARANet(width=16, layers=1, heads=2, planner_hints=True, pick_hints=True)
    assert net.row_skip.weight.shape == (1, 4) and float(net.edf_skip.weight[0, -1].detach()) == 5.0
    loaded, _, _ = load_checkpoint(save_checkpoint(net, tmp_path / "picks.pt", {"forecaster": "wls"}))
    assert loaded.config["pick_hints"] is True
    with pytest.raises(ValueError, match="pick_hints needs planner_hints"):
        SlotMARANet(width=16, layers=1, heads=2, pick_hints=True)
