"""A slot actor whose big clusters read a gate of their own (``split_gate``)."""

from __future__ import annotations

import json
import subprocess

import numpy as np
import pytest
import torch

from mara_agents.mara.checkpoint import load_checkpoint, save_checkpoint
from mara_agents.mara.context_features import RULE_MIN_NODES
from mara_agents.mara.frozen_parts import frozen_names
from mara_agents.mara.gate_dagger import Corner, GateLabels, dagger_rounds, fit_gate, gate_agreement, keep_own_gate
from mara_agents.mara.input_grafts import graft_gate_rule, rule_on_big_clusters, split_gate
from mara_agents.mara.numpy_actor import NumpySlotEncoder
from tests.test_gate_rule_input import ENV, EPISODES, _net, _ruled, _turns, assert_refused, tune_gate_on_labels

SMALL_GATE = ("gate.weight", "gate.bias", "gate_hidden.weight", "gate_hidden.bias")


def _split() -> torch.nn.Module:
    return split_gate(_ruled(graft_gate_rule(_net())))


def _labels(seed: int = 5, slots: int = 200) -> tuple[GateLabels, np.ndarray]:
    """Slots half on 32 nodes, labelled with the rule's path, half on 8 nodes, labelled srw; and which are big."""
    rng = np.random.default_rng(seed)
    rule = np.eye(3, dtype=np.float32)[rng.integers(0, 3, slots)]
    inputs = np.concatenate([rng.normal(size=(slots, 18)).astype(np.float32), rule], 1)
    nodes = np.repeat([32, 8], slots // 2)
    counts = np.where((nodes == 32)[:, None], rule, np.eye(3, dtype=np.float32)[0]) * 3
    return GateLabels(inputs, counts, np.full(slots, "tabular"), nodes), nodes >= RULE_MIN_NODES


@pytest.mark.parametrize("num_nodes", [6, RULE_MIN_NODES])
def test_a_fresh_split_plays_as_one_gate_and_each_size_reads_its_own(tmp_path, num_nodes):
    net = _ruled(graft_gate_rule(_net()))
    split = split_gate(net)
    assert split.config["split_gate"] and not net.config.get("split_gate")  # the original is unchanged
    vectors = [o["observation"] for seed, load in EPISODES for o, _ in _turns(seed, load, num_nodes)][::5]
    obs = torch.as_tensor(np.stack(vectors))
    with torch.no_grad():  # (one grad mode throughout: attention takes another path with grad)
        one = net.encode(obs).gate
        assert torch.equal(split.encode(obs).gate, one)  # a copy of the gate
        split.big_gate.weight.fill_(-0.5)
        moved = split.encode(obs).gate
    if num_nodes < RULE_MIN_NODES:
        assert torch.equal(moved, one)  # small clusters never read the big gate
    else:
        assert not torch.allclose(moved, one)
    reloaded = load_checkpoint(save_checkpoint(split, tmp_path / "s.pt", {**ENV, "num_nodes": num_nodes}))[0]
    assert reloaded.config == split.config
    encoder = NumpySlotEncoder(reloaded)
    for row in range(0, len(vectors), 6):
        assert encoder(vectors[row]).gate == pytest.approx(float(moved[row, 0]), abs=1e-5)  # numpy picks alike


def test_a_big_only_fit_learns_big_clusters_and_leaves_small_ones_exactly():
    labels, big = _labels()
    net = _split()
    before = {name: tensor.clone() for name, tensor in net.state_dict().items()}
    small = GateLabels(labels.inputs[~big], labels.counts[~big], labels.workloads[~big], labels.nodes[~big])
    big_labels = GateLabels(labels.inputs[big], labels.counts[big], labels.workloads[big], labels.nodes[big])
    with torch.no_grad():
        small_before = torch.cat(net.gate_weights(torch.from_numpy(small.inputs), torch.from_numpy(small.nodes)), -1)
    stats = fit_gate(net, labels, steps=300, big_only=True)
    after = net.state_dict()
    for name, tensor in before.items():
        assert torch.equal(after[name], tensor) == (not name.startswith("big_gate")), name
    with torch.no_grad():
        small_after = torch.cat(net.gate_weights(torch.from_numpy(small.inputs), torch.from_numpy(small.nodes)), -1)
    assert torch.equal(small_after, small_before)
    assert gate_agreement(net, big_labels) > 0.9 and stats["loss_after"] < stats["loss_before"]
    whole = _split()
    fit_gate(whole, labels, steps=300)  # without big_only both gates move: small clusters follow srw
    with torch.no_grad():
        small_whole = torch.cat(whole.gate_weights(torch.from_numpy(small.inputs), torch.from_numpy(small.nodes)), -1)
    assert not torch.allclose(small_whole, small_before) and gate_agreement(whole, small) > 0.9


def test_refusals_and_the_frozen_gate():
    labels, _ = _labels(slots=4)
    with pytest.raises(ValueError, match="split_gate needs gate_context=True"):
        _net(split_gate=True)
    with pytest.raises(ValueError, match="gate with a tanh layer"):
        split_gate(_net())
    with pytest.raises(ValueError, match="not split yet"):
        split_gate(_split())
    with pytest.raises(ValueError, match="must have one"):
        fit_gate(graft_gate_rule(_net()), labels, steps=1, big_only=True)
    with pytest.raises(ValueError, match="choose one"):
        fit_gate(_split(), labels, steps=1, rule_only=True, big_only=True)
    with pytest.raises(ValueError, match="cluster size"):
        _split().gate_weights(torch.from_numpy(labels.inputs))
    assert {"big_gate.weight", "big_gate_hidden.bias"} <= set(frozen_names(_split(), ["gate"]))


def test_tune_gate_splits_the_gate_and_fits_big_clusters_only(tmp_path):
    limited = rule_on_big_clusters(_ruled(graft_gate_rule(_net())))
    player = save_checkpoint(limited, tmp_path / "player.pt", {"forecaster": "wls"})
    linear = save_checkpoint(_net(), tmp_path / "linear.pt", {"forecaster": "wls"})  # no tanh layer to copy
    labels, _ = _labels(seed=3, slots=40)
    labels.save(tmp_path / "labels.npz")

    def tune(*flags: str, checkpoint=player, out: str = "o", labels: bool = True) -> subprocess.CompletedProcess:
        return tune_gate_on_labels(tmp_path, checkpoint, *flags, out=out, labels=labels)

    done = tune("--split-gate", "--teach-only", "tabular,17-64")
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads((tmp_path / "o" / "report.json").read_text())
    assert report["split_gate"] is True

    # the limited checkpoint reads the labels as its gate does: the rule zeroed on the 8-node slots
    def agreement(read: GateLabels) -> float:
        return gate_agreement(limited, keep_own_gate(limited, read, [Corner("tabular", 17, 64)]))

    expected = agreement(labels.with_rule_on_big_clusters())
    assert report["rounds"][0]["agreement_before"] == pytest.approx(expected)
    assert expected != pytest.approx(agreement(labels))  # which the unlimited reading would not give
    refit = load_checkpoint(tmp_path / "o" / "checkpoint.pt")[0]
    assert refit.config["split_gate"] and refit.config["gate_rule_big"]
    for name in SMALL_GATE:
        assert torch.equal(refit.state_dict()[name], limited.state_dict()[name]), name
    assert not torch.equal(refit.big_gate.weight, limited.gate.weight)
    assert_refused(tune, tmp_path, [
        (["--split-gate"], linear, True, 1, "--split-gate: "),
        (["--split-gate"], player, False, 2, "--split-gate refits on saved --labels"),
        (["--split-gate", "--fit-rule-only"], player, True, 2, "choose one"),
    ])  # fmt: skip


@pytest.mark.parametrize("num_nodes", [6, RULE_MIN_NODES])
def test_gate_rounds_on_a_split_network_fit_the_big_gate_alone(tmp_path, num_nodes):
    net = _split()
    before = {name: tensor.clone() for name, tensor in net.state_dict().items()}
    checkpoint = save_checkpoint(net, tmp_path / "split.pt", ENV)
    play = {**ENV, "num_nodes": num_nodes, "max_tasks": 8, "horizon": 30}
    dagger_rounds(net, checkpoint, play, "best_shared", None, tmp_path / "fit.pt", rounds=1, episodes=1,
                  steps=50, jobs=1, progress=False)  # fmt: skip
    after = load_checkpoint(tmp_path / "fit.pt")[0].state_dict()
    moved = {name for name, tensor in before.items() if not torch.equal(after[name], tensor)}
    if num_nodes < RULE_MIN_NODES:
        assert not moved  # small clusters' slots teach nothing: their gate is kept, and the big one unplayed
    else:
        assert moved and all(name.startswith("big_gate") for name in moved), moved
