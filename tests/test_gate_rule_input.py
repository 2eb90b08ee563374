"""A gate that also reads the path ``load_switch``'s rule names for the slot (``gate_rule``)."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
import torch

import mara_env
from mara_agents.mara.checkpoint import load_checkpoint, save_checkpoint
from mara_agents.mara.context_features import LIVE_TASKS, QUEUED_TASKS, gate_rule_inputs
from mara_agents.mara.gate_dagger import GateLabels, fit_gate, gate_agreement
from mara_agents.mara.gate_paths import GATE_PATHS
from mara_agents.mara.input_grafts import graft_gate_context, graft_gate_rule, rule_on_big_clusters
from mara_agents.mara.numpy_actor import NumpySlotEncoder, NumpyTurnHead
from mara_agents.mara.rule_gate import load_switch_path
from mara_agents.mara.slot_network import SlotMARANet
from mara_agents.mara.teacher_rules import LOAD_SWITCH_RATE, LoadSwitchScheduler
from mara_env.env import live_turns
from mara_env.observation import GLOBAL_FEATURES, layout_of
from tests.numpy_parity import torch_turn
from tests.scripts import run_script

RATE = GLOBAL_FEATURES.index("arrival_rate")
HINTED = {"planner_hints": True, "pick_hints": True, "uniform_pick": True}
ENV = {"num_nodes": 6, "max_tasks": 6, "forecaster": "wls", "horizon": 80, "workload": "tabular"}
# at the rule's own rate these small tabular episodes play all three paths
EPISODES = [(1, "heavy"), (2, "extreme")]


def _net(seed: int = 0, **flags) -> SlotMARANet:
    torch.manual_seed(seed)
    return SlotMARANet(width=16, layers=1, heads=2, **{**HINTED, **flags}).eval()


def _turns(seed: int, load: str, num_nodes: int = ENV["num_nodes"]):
    """(observation, load_switch's path or None where nothing may be chosen) at every turn it plays."""
    env = mara_env.raw_env(**{**ENV, "num_nodes": num_nodes}, load=load)
    env.reset(seed=seed)
    rule = LoadSwitchScheduler()
    rule.reset(seed)
    for agent in live_turns(env):
        observation = env.observe(agent)
        action = rule.act(observation, agent)
        yield observation, rule.last_path if observation["action_mask"][1:].any() else None
        env.step(action)


def tune_gate_on_labels(
    tmp_path, checkpoint, *flags: str, out: str = "o", labels: bool = True
) -> subprocess.CompletedProcess:
    """``examples/tune_gate.py`` on ``checkpoint`` with ``flags``, writing to ``tmp_path/out``; with ``labels``
    a 100-step refit on ``tmp_path/labels.npz``."""
    saved = ["--labels", str(tmp_path / "labels.npz"), "--steps", "100"] if labels else []
    command = [sys.executable, "examples/tune_gate.py", "--checkpoint", str(checkpoint), *saved,
               "--out", str(tmp_path / out), *flags]  # fmt: skip
    return run_script(command)


def assert_refused(tune, tmp_path, cases) -> None:
    """Each case ``(flags, checkpoint, labels, exit code, message)`` run by ``tune`` into ``tmp_path/p``
    exits with that code and message, and no refusal writes anything."""
    for flags, checkpoint, labels, code, message in cases:
        refused = tune(*flags, checkpoint=checkpoint, out="p", labels=labels)
        assert refused.returncode == code and message in refused.stderr, refused.stderr[-2000:]
    assert not (tmp_path / "p").exists()


def test_the_rule_inputs_by_hand_in_torch_and_numpy():
    globals_ = np.zeros((4, len(GLOBAL_FEATURES)), np.float32)
    globals_[:, RATE] = [LOAD_SWITCH_RATE, 0.06, 0.06, 0.06]  # at the rate srw still plays
    globals_[:, LIVE_TASKS] = [1.0, 1.0, 1.0, 0.5]
    globals_[:, QUEUED_TASKS] = [1.0, 0.0, 0.125, 0.25]  # of 8 rows: 8 tasks fit, 9 do not
    expected = np.array([[1, 0, 0], [0, 1, 0], [0, 0, 1], [0, 1, 0]], np.float32)
    np.testing.assert_array_equal(gate_rule_inputs(globals_, 8), expected)
    torch.testing.assert_close(gate_rule_inputs(torch.from_numpy(globals_), 8), torch.from_numpy(expected))
    np.testing.assert_array_equal(gate_rule_inputs(globals_[2], 8), expected[2])  # one slot's globals


@pytest.mark.parametrize(("seed", "load"), EPISODES)
def test_the_rule_inputs_name_the_path_load_switch_plays(seed, load):
    seen = set()
    k = ENV["max_tasks"]
    for observation, path in _turns(seed, load):
        vector = observation["observation"]
        globals_ = layout_of(vector).split_observation(vector)[1]
        one_hot = gate_rule_inputs(globals_, k)
        assert one_hot.sum() == 1.0
        named = GATE_PATHS[int(one_hot.argmax())]
        assert named == load_switch_path(vector)
        if path is not None:
            assert named == path
            seen.add(path)
    assert seen == set(GATE_PATHS)


def test_the_graft_plays_as_the_original_and_numpy_reads_the_rule_alike(tmp_path):
    net = graft_gate_context(_net())
    grafted = graft_gate_rule(net)
    assert grafted.config["gate_rule"] and not net.config["gate_rule"]  # the original is unchanged
    assert grafted.gate_hidden.in_features == net.gate_hidden.in_features + 3
    turns = [(o["observation"], o["action_mask"].astype(np.float32)) for o, _ in _turns(*EPISODES[1])]
    obs, masks = (torch.as_tensor(np.stack(x)) for x in zip(*turns))
    with torch.no_grad():
        torch.testing.assert_close(grafted.logits(obs, masks), net.logits(obs, masks))  # read at weight 0
        grafted.gate_hidden.weight[:, -3:].normal_(0.0, 2.0, generator=torch.Generator().manual_seed(1))
        grafted.gate.weight.fill_(0.3)
        assert not torch.allclose(grafted.encode(obs).gate, net.encode(obs).gate)  # the rule is really read
    reloaded = load_checkpoint(save_checkpoint(grafted, tmp_path / "g.pt", ENV))[0]
    assert reloaded.config == grafted.config
    encoder, head = NumpySlotEncoder(reloaded), NumpyTurnHead(reloaded)
    for vector, mask in turns[::7]:
        encoding, expected = torch_turn(reloaded, vector, mask)
        parts = encoder(vector)
        assert (parts.gate, parts.uniform_gate) == pytest.approx(
            (float(encoding.gate[0, 0]), float(encoding.uniform_gate[0, 0])), abs=1e-5
        )
        np.testing.assert_allclose(head.logits(parts, vector, mask), expected, rtol=1e-4, atol=1e-4)


def test_a_linear_gate_first_gets_the_context_layer():
    net = _net()
    grafted, context = graft_gate_rule(net, seed=4), graft_gate_context(net, seed=4)
    assert grafted.config["gate_context"] and grafted.config["gate_rule"]
    torch.testing.assert_close(grafted.gate_hidden.weight[:, :-3], context.gate_hidden.weight)
    assert torch.equal(grafted.gate_hidden.weight[:, -3:], torch.zeros(grafted.gate_hidden.out_features, 3))


def test_refusals():
    with pytest.raises(ValueError, match="gate_rule needs gate_context=True"):
        _net(gate_rule=True)
    with pytest.raises(ValueError, match="no gate_rule yet"):
        graft_gate_rule(graft_gate_rule(_net()))
    with pytest.raises(ValueError, match="planner hints"):
        graft_gate_rule(SlotMARANet(width=16, layers=1, heads=2))


def test_a_fitted_rule_gate_follows_the_rule_only_where_the_token_says():
    # the labels follow the rule's path where the token's first number is positive, edf elsewhere: on
    # slots it was not fitted on, a gate that reads the rule follows them, one that reads only the token
    # and the load cannot (the rule's path is drawn at random here)
    rng = np.random.default_rng(0)
    tokens = rng.normal(size=(1000, 16)).astype(np.float32)
    load = rng.random((1000, 2)).astype(np.float32)
    rule = np.eye(3, dtype=np.float32)[rng.integers(0, 3, 1000)]
    counts = np.where(tokens[:, :1] > 0, rule, np.eye(3, dtype=np.float32)[1]) * 4
    names, nodes = np.full(1000, "tabular"), np.full(1000, 32)

    def held_out_agreement(net: SlotMARANet, inputs: np.ndarray) -> float:
        fit_gate(net, GateLabels(inputs[:600], counts[:600], names[:600], nodes[:600]), steps=300)
        return gate_agreement(net, GateLabels(inputs[600:], counts[600:], names[600:], nodes[600:]))

    without = held_out_agreement(graft_gate_context(_net()), np.concatenate([tokens, load], 1))
    ruled = held_out_agreement(graft_gate_rule(_net()), np.concatenate([tokens, load, rule], 1))
    assert without < 0.8 < 0.9 < ruled


def test_tune_gate_grafts_the_rule_and_labels_what_the_gate_reads(tmp_path):
    checkpoint = save_checkpoint(_net(), tmp_path / "net.pt", {"forecaster": "wls"})
    command = [sys.executable, "examples/tune_gate.py", "--checkpoint", str(checkpoint), "--out", str(tmp_path / "o"),
               "--graft-gate-rule", "--episodes", "2", "--rounds", "1", "--steps", "5", "--jobs", "1",
               "--train-args", "--teacher best --quick"]  # fmt: skip
    done = run_script(command)
    assert done.returncode == 0, done.stderr[-2000:]
    assert load_checkpoint(tmp_path / "o" / "grafted.pt")[0].config["gate_rule"]
    assert load_checkpoint(tmp_path / "o" / "checkpoint.pt")[0].config["gate_rule"]
    labels = GateLabels.load(tmp_path / "o" / "labels.npz")
    assert labels.inputs.shape[1] == 16 + 2 + 3  # the slot token, the load, the rule's path
    np.testing.assert_array_equal(labels.inputs[:, -3:].sum(1), 1.0)
    saved = str(tmp_path / "o" / "labels.npz")
    refused = run_script([*command[:6], "--graft-gate-rule", "--labels", saved])
    assert refused.returncode == 2 and "--graft-gate-rule plays new labels" in refused.stderr
    both = run_script([*command, "--graft-gate-context"])
    assert both.returncode == 2 and "name one" in both.stderr


def test_the_rule_reaches_a_big_cluster_gate_only_from_17_nodes_by_hand():
    globals_ = np.zeros((4, len(GLOBAL_FEATURES)), np.float32)
    globals_[:, RATE] = 0.06  # above the rule's rate; 4 of 8 rows live, none queued: edf
    globals_[:, LIVE_TASKS] = 0.5
    nodes = np.array([8, 16, 17, 64], np.float32)
    expected = np.array([[0, 0, 0], [0, 0, 0], [0, 1, 0], [0, 1, 0]], np.float32)
    np.testing.assert_array_equal(gate_rule_inputs(globals_, 8, nodes), expected)
    torch.testing.assert_close(
        gate_rule_inputs(torch.from_numpy(globals_), 8, torch.from_numpy(nodes)), torch.from_numpy(expected)
    )
    np.testing.assert_array_equal(gate_rule_inputs(globals_[0], 8, 16), [0, 0, 0])  # one slot's globals, M = 16
    np.testing.assert_array_equal(gate_rule_inputs(globals_[0], 8, 17), [0, 1, 0])
    np.testing.assert_array_equal(gate_rule_inputs(globals_, 8), np.tile([0, 1, 0], (4, 1)))  # every size


def _ruled(net: SlotMARANet) -> SlotMARANet:
    """``net`` with the rule's weights drawn large, so that reading it moves the gate."""
    with torch.no_grad():
        net.gate_hidden.weight[:, -3:].normal_(0.0, 2.0, generator=torch.Generator().manual_seed(1))
        net.gate.weight.fill_(0.3)
    return net


@pytest.mark.parametrize("num_nodes", [6, 17])
def test_a_gate_limited_to_big_clusters_ignores_the_rule_below_17_nodes(tmp_path, num_nodes):
    ruled = _ruled(graft_gate_rule(graft_gate_context(_net())))
    limited = rule_on_big_clusters(ruled)
    assert limited.config["gate_rule_big"] and not ruled.config["gate_rule_big"]  # the original is unchanged
    blind = _ruled(graft_gate_rule(graft_gate_context(_net())))
    with torch.no_grad():
        blind.gate_hidden.weight[:, -3:] = 0.0  # the same gate, the rule unread
    vectors = [o["observation"] for seed, load in EPISODES for o, _ in _turns(seed, load, num_nodes)]
    obs = torch.as_tensor(np.stack(vectors[::5]))
    with torch.no_grad():
        gates = {name: net.encode(obs).gate for name, net in (("r", ruled), ("l", limited), ("b", blind))}
    if num_nodes < 17:
        torch.testing.assert_close(gates["l"], gates["b"])  # the rule does not reach the gate
        assert not torch.allclose(gates["r"], gates["b"])  # where the unlimited gate reads it
    else:
        torch.testing.assert_close(gates["l"], gates["r"])  # from 17 nodes it reads the rule as before
    reloaded = load_checkpoint(save_checkpoint(limited, tmp_path / "l.pt", {**ENV, "num_nodes": num_nodes}))[0]
    assert reloaded.config == limited.config
    encoder = NumpySlotEncoder(reloaded)
    for row, vector in enumerate(vectors[::5][::6]):
        assert encoder(vector).gate == pytest.approx(float(gates["l"][row * 6, 0]), abs=1e-5)  # numpy reads it alike


def test_labels_read_as_a_big_cluster_gate_reads_them_and_refusals():
    inputs = np.ones((3, 21), np.float32)
    labels = GateLabels(inputs, np.ones((3, 3), np.float32), np.full(3, "tabular"), np.array([8, 17, 64]))
    limited = labels.with_rule_on_big_clusters()
    np.testing.assert_array_equal(limited.inputs[:, -3:], [[0, 0, 0], [1, 1, 1], [1, 1, 1]])
    np.testing.assert_array_equal(limited.inputs[:, :-3], inputs[:, :-3])
    np.testing.assert_array_equal(labels.inputs, inputs)  # the labels given are left as they were
    with pytest.raises(ValueError, match="gate_rule_big needs gate_rule=True"):
        _net(gate_context=True, gate_rule_big=True)
    with pytest.raises(ValueError, match="needs a gate that reads the rule"):
        rule_on_big_clusters(graft_gate_context(_net()))
    with pytest.raises(ValueError, match="needs a gate that reads the rule"):
        rule_on_big_clusters(rule_on_big_clusters(graft_gate_rule(_net())))


def test_tune_gate_refits_a_gate_that_reads_the_rule_on_big_clusters_only(tmp_path):
    player = save_checkpoint(graft_gate_rule(_net()), tmp_path / "player.pt", {"forecaster": "wls"})
    plain = save_checkpoint(graft_gate_context(_net()), tmp_path / "plain.pt", {"forecaster": "wls"})
    rng = np.random.default_rng(3)
    rule = np.eye(3, dtype=np.float32)[rng.integers(0, 3, 40)]
    inputs = np.concatenate([rng.normal(size=(40, 18)).astype(np.float32), rule], 1)
    GateLabels(inputs, rule * 3, np.full(40, "tabular"), np.repeat([32, 8], 20)).save(tmp_path / "labels.npz")

    def tune(*flags: str, checkpoint=player, out: str = "o", labels: bool = True) -> subprocess.CompletedProcess:
        return tune_gate_on_labels(tmp_path, checkpoint, *flags, out=out, labels=labels)

    done = tune("--teach-only", "tabular,17-64", "--rule-on-big-clusters")
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads((tmp_path / "o" / "report.json").read_text())["rule_on_big_clusters"] is True
    refit = load_checkpoint(tmp_path / "o" / "checkpoint.pt")[0]
    assert refit.config["gate_rule_big"]
    small = torch.from_numpy(inputs[20:].copy())
    small[:, -3:] = 0.0  # what the gate reads on the 8-node slots
    with torch.no_grad():  # the 8-node slots were held to the player's even weights, the rule unread there
        assert torch.cat(refit.gate_weights(small), -1).max() < 0.6
    assert gate_agreement(refit, GateLabels(inputs[:20], rule[:20] * 3, np.full(20, "tabular"), np.full(20, 32))) > 0.8
    only = tune("--teach-only", "tabular,17-64", "--rule-on-big-clusters", "--fit-rule-only", out="r")
    assert only.returncode == 0, only.stderr[-2000:]
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    assert report["fit_rule_only"] is True and report["rule_on_big_clusters"] is True
    assert_refused(tune, tmp_path, [
        (["--rule-on-big-clusters"], plain, True, 1, "cannot take it (rule_on_big_clusters needs a gate that reads"),
        (["--fit-rule-only"], plain, True, 1, "gate does not read the rule (gate_rule)"),
        (["--fit-rule-only"], player, False, 2, "--fit-rule-only refits on saved --labels"),
        (["--graft-gate-context", "--rule-on-big-clusters"], player, False, 2, "--graft-gate-context gives none"),
    ])  # fmt: skip


def test_a_rule_only_fit_moves_the_rule_weights_alone_and_small_clusters_not_at_all():
    # labels follow the rule on 32-node slots; 8-node slots (the rule unread there) ask for edf
    rng = np.random.default_rng(5)
    rule = np.eye(3, dtype=np.float32)[rng.integers(0, 3, 200)]
    inputs = np.concatenate([rng.normal(size=(200, 18)).astype(np.float32), rule], 1)
    nodes = np.repeat([32, 8], 100)
    counts = np.where((nodes == 32)[:, None], rule, np.eye(3, dtype=np.float32)[1]) * 3
    labels = GateLabels(inputs, counts, np.full(200, "tabular"), nodes).with_rule_on_big_clusters()
    net = rule_on_big_clusters(graft_gate_rule(_net()))
    before = {name: tensor.clone() for name, tensor in net.state_dict().items()}
    small = torch.from_numpy(labels.inputs[100:])
    with torch.no_grad():
        small_before = torch.cat(net.gate_weights(small), -1)
    stats = fit_gate(net, labels, steps=300, rule_only=True)
    after = net.state_dict()
    for name, tensor in before.items():
        if name != "gate_hidden.weight":
            assert torch.equal(after[name], tensor), name
    assert torch.equal(after["gate_hidden.weight"][:, :-3], before["gate_hidden.weight"][:, :-3])
    assert not torch.equal(after["gate_hidden.weight"][:, -3:], before["gate_hidden.weight"][:, -3:])
    with torch.no_grad():
        assert torch.equal(torch.cat(net.gate_weights(small), -1), small_before)  # exactly as before
    big = GateLabels(labels.inputs[:100], counts[:100], np.full(100, "tabular"), nodes[:100])
    assert gate_agreement(net, big) > 0.9 and stats["loss_after"] < stats["loss_before"]
    with pytest.raises(ValueError, match="the gate must read it"):
        fit_gate(graft_gate_context(_net()), labels, steps=1, rule_only=True)
