"""DAgger on the gate alone: labels of the policy's own play, and a fit that moves only the gate."""

from __future__ import annotations

import json
import math
import sys

import numpy as np
import pytest
import torch

from mara_agents.mara.action_dagger import ACTION_SEED_BASE
from mara_agents.mara.checkpoint import load_checkpoint, save_checkpoint
from mara_agents.mara.frozen_parts import part_digest
from mara_agents.mara.gate_dagger import (
    GATE_SEED_BASE,
    GATE_SEED_SPAN,
    Corner,
    GateLabels,
    dagger_rounds,
    fit_gate,
    gate_agreement,
    gate_cross_entropy,
    gate_seeds,
    keep_own_gate,
    label_own_play,
)
from mara_agents.mara.slot_network import SlotMARANet
from tests.scripts import run_script

HINTED = {"planner_hints": True, "pick_hints": True, "uniform_pick": True}
SMALL_ENV = {"num_nodes": 4, "max_tasks": 8, "horizon": 40, "workload": "synthetic", "load": "heavy",
             "forecaster": "wls"}  # fmt: skip


def _net(**flags) -> SlotMARANet:
    torch.manual_seed(0)
    return SlotMARANet(width=16, layers=1, heads=2, **{**HINTED, **flags})


def _labels(inputs: np.ndarray, counts: np.ndarray) -> GateLabels:
    return GateLabels(inputs, counts, np.full(len(counts), "tabular"), np.full(len(counts), 32))


def test_gate_cross_entropy_weighs_each_labelled_turn():
    net = _net()
    with torch.no_grad():  # a constant gate: srw 2/6, edf 1/6, uniform 3/6 (logits against edf's 0)
        net.gate.bias.copy_(torch.tensor([math.log(2.0), math.log(3.0)]))
    labels = _labels(np.zeros((2, 16), dtype=np.float32), np.array([[1, 2, 0], [0, 0, 3]], dtype=np.float32))
    expected = -(math.log(2 / 6) + 2 * math.log(1 / 6) + 3 * math.log(3 / 6)) / 6
    assert float(gate_cross_entropy(net, labels).detach()) == pytest.approx(expected, rel=1e-5)
    assert gate_agreement(net, labels) == pytest.approx(3 / 6)  # uniform leads both slots: the 3 uniform turns
    # a network without the uniform path never counts a uniform label
    plain = _net(uniform_pick=False)
    with torch.no_grad():
        plain.gate.bias.fill_(math.log(3.0))  # srw 3/4, edf 1/4
    expected = -(math.log(3 / 4) + 2 * math.log(1 / 4)) / 3
    assert float(gate_cross_entropy(plain, labels).detach()) == pytest.approx(expected, rel=1e-5)


def test_fit_gate_learns_the_rate_from_the_labels_and_leaves_the_rest_alone():
    net = _net(gate_context=True)
    rng = np.random.default_rng(0)
    inputs = rng.normal(size=(400, 18)).astype(np.float32)
    inputs[:, 16] = rng.uniform(0.5, 2.0, size=400)  # the scaled arrival rate
    counts = np.zeros((400, 3), dtype=np.float32)
    calm = inputs[:, 16] < 1.1
    counts[calm, 0], counts[~calm, 2] = 5, 5  # srw while calm, uniform under overload
    before = {name: value.clone() for name, value in net.state_dict().items()}
    stats = fit_gate(net, _labels(inputs, counts), steps=300)
    assert stats["agreement_before"] < 0.7 and stats["agreement_after"] > 0.95
    assert stats["loss_after"] < stats["loss_before"]
    changed = {name for name, value in net.state_dict().items() if not torch.equal(value, before[name])}
    assert changed == {"gate.weight", "gate.bias", "gate_hidden.weight", "gate_hidden.bias"}


def test_fit_gate_refuses_no_labels():
    with pytest.raises(ValueError, match="no labelled slot"):
        fit_gate(_net(), _labels(np.zeros((0, 16), np.float32), np.zeros((0, 3), np.float32)))


def test_own_play_labels_are_the_teachers_winner_and_reproducible(tmp_path):
    checkpoint = save_checkpoint(_net(gate_context=True), tmp_path / "net.pt", {"forecaster": "wls"})
    seeds = [5, 6]
    labels = [label_own_play(checkpoint, SMALL_ENV, "best_shared", [seed], progress=False) for seed in seeds]
    for one in labels:
        assert len(one) > 0 and one.inputs.shape == (len(one), 18)
        assert (one.counts.sum(-1) > 0).all()
        # best_shared labels a whole episode with its winner, srw or edf: one path per episode
        assert np.count_nonzero(one.counts.sum(0)) == 1 and one.counts[:, 2].sum() == 0
        assert np.all((one.inputs[:, 16] >= 0) & (one.inputs[:, 16] <= 5.0))  # the capped scaled rate
        np.testing.assert_allclose(one.inputs[:, 17], np.log2(4) / 6)  # log2 M / 6
        assert set(one.workloads) == {"synthetic"} and set(one.nodes) == {4}
    both = label_own_play(checkpoint, SMALL_ENV, "best_shared", seeds, jobs=2, progress=False)
    np.testing.assert_array_equal(both.counts, np.concatenate([one.counts for one in labels]))
    np.testing.assert_array_equal(both.inputs, np.concatenate([one.inputs for one in labels]))


def test_own_play_refuses_a_network_without_a_gate(tmp_path):
    checkpoint = save_checkpoint(SlotMARANet(width=16, layers=1, heads=2), tmp_path / "net.pt", {"forecaster": "wls"})
    with pytest.raises(ValueError, match="needs a slot actor with planner hints"):
        label_own_play(checkpoint, SMALL_ENV, "best_shared", [0], progress=False)


def test_tune_gate_refuses_to_write_beside_its_checkpoint(tmp_path):
    checkpoint = save_checkpoint(_net(), tmp_path / "net.pt", {"forecaster": "wls"})
    done = run_script(
        [sys.executable, "examples/tune_gate.py", "--checkpoint", str(checkpoint), "--out", str(tmp_path)]
    )
    assert done.returncode == 2 and "--out must not be the checkpoint's directory" in done.stderr


def test_labels_round_trip_and_a_corrupt_file_is_named(tmp_path):
    labels = _labels(np.ones((3, 18), np.float32), np.array([[1, 0, 0], [0, 2, 0], [0, 0, 3]], np.float32))
    labels.save(tmp_path / "labels.npz")
    loaded = GateLabels.load(tmp_path / "labels.npz")
    for name in ("inputs", "counts", "workloads", "nodes"):
        np.testing.assert_array_equal(getattr(loaded, name), getattr(labels, name))
    (tmp_path / "bad.npz").write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="bad.npz: not a readable file of gate labels"):
        GateLabels.load(tmp_path / "bad.npz")
    np.savez(tmp_path / "negative.npz", inputs=labels.inputs, counts=-labels.counts, workloads=labels.workloads,
             nodes=labels.nodes)  # fmt: skip
    with pytest.raises(ValueError, match="counts >= 0"):
        GateLabels.load(tmp_path / "negative.npz")


def test_tune_gate_refits_on_saved_labels_without_playing(tmp_path):
    checkpoint = save_checkpoint(_net(), tmp_path / "net.pt", {"forecaster": "wls"})
    inputs = np.random.default_rng(1).normal(size=(50, 16)).astype(np.float32)
    counts = np.zeros((50, 3), np.float32)
    counts[:, 1] = 2  # edf everywhere: a refit must lead with edf at every slot
    _labels(inputs, counts).save(tmp_path / "labels.npz")
    command = [sys.executable, "examples/tune_gate.py", "--checkpoint", str(checkpoint), "--out", str(tmp_path / "o"),
               "--labels", str(tmp_path / "labels.npz"), "--steps", "200"]  # fmt: skip
    done = run_script(command)
    assert done.returncode == 0, done.stderr[-2000:]
    refit = load_checkpoint(tmp_path / "o" / "checkpoint.pt")[0]
    fitted = json.loads((tmp_path / "o" / "report.json").read_text())["rounds"][0]
    assert fitted["agreement_before"] == 0.0  # a zero gate weighs the paths alike and leads with srw
    assert fitted["agreement_after"] > 0.8 and fitted["loss_after"] < fitted["loss_before"]
    assert gate_agreement(refit, _labels(inputs, counts)) == pytest.approx(fitted["agreement_after"])
    bad = run_script([*command[:-4], "--labels", str(checkpoint)])
    assert bad.returncode != 0 and "--labels:" in bad.stderr and "not a file of gate labels (missing" in bad.stderr
    bad_out = [*command[:4], "--out", str(tmp_path / "never"), "--labels", str(checkpoint)]
    refused = run_script(bad_out)
    assert refused.returncode == 1 and not (tmp_path / "never").exists()  # a refusal leaves no empty --out


def test_tune_gate_refuses_a_graft_before_writing_anything(tmp_path):
    checkpoint = save_checkpoint(SlotMARANet(width=16, layers=1, heads=2), tmp_path / "net.pt", {"forecaster": "wls"})
    command = [sys.executable, "examples/tune_gate.py", "--checkpoint", str(checkpoint), "--out", str(tmp_path / "o"),
               "--graft-gate-context", "--train-args", "--teacher best --quick"]  # fmt: skip
    refused = run_script(command)
    assert refused.returncode == 1 and "--graft-gate-context:" in refused.stderr and "cannot take it" in refused.stderr
    assert not (tmp_path / "o").exists()


def test_tune_gate_fits_a_grafted_gate_that_reads_the_load(tmp_path):
    checkpoint = save_checkpoint(_net(), tmp_path / "net.pt", {"forecaster": "wls"})
    command = [sys.executable, "examples/tune_gate.py", "--checkpoint", str(checkpoint), "--out", str(tmp_path / "o"),
               "--graft-gate-context", "--episodes", "2", "--rounds", "1", "--steps", "5", "--jobs", "1",
               "--train-args", "--teacher best --quick"]  # fmt: skip
    done = run_script(command)
    assert done.returncode == 0, done.stderr[-2000:]
    fitted = load_checkpoint(tmp_path / "o" / "checkpoint.pt")[0]
    assert fitted.config["gate_context"] and fitted.gate_hidden is not None
    assert load_checkpoint(tmp_path / "o" / "grafted.pt")[0].config["gate_context"]  # the first round's player
    labels = GateLabels.load(tmp_path / "o" / "labels.npz")
    assert labels.inputs.shape[1] == 16 + 2  # the slot token, the rate and log2 M: what the grafted gate reads
    refused = run_script([*command[:6], "--graft-gate-context", "--labels", str(tmp_path / "o" / "labels.npz")])
    assert refused.returncode == 2 and "saved --labels were read by the gate before the graft" in refused.stderr


def test_keep_own_gate_labels_every_untaught_slot_with_the_gates_own_weights():
    # a zero gate over three paths weighs each 1/3, so an untaught slot of n turns gets n/3 on each
    counts = np.array([[0, 3, 0], [2, 0, 0], [0, 4, 2], [0, 0, 6]], np.float32)
    labels = GateLabels(np.zeros((4, 16), np.float32), counts, np.array(["tabular", "tabular", "tabular", "vision"]),
                        np.array([32, 32, 8, 32]))  # fmt: skip
    kept = keep_own_gate(_net(), labels, [Corner("tabular", 17, 64)])
    np.testing.assert_allclose(kept.counts, [[0, 3, 0], [2, 0, 0], [2, 2, 2], [2, 2, 2]], rtol=1e-6)
    two = keep_own_gate(_net(), labels, [Corner("tabular", 17, 64), Corner("vision", 32, 32, weight=2.0)])
    np.testing.assert_allclose(two.counts, [[0, 3, 0], [2, 0, 0], [2, 2, 2], [0, 0, 12]], rtol=1e-6)  # vision x2
    assert [str(c) for c in (Corner("tabular", 17, 64), Corner("rl", 17, 64, 10.0))] == ["tabular,17-64", "rl,17-64,10"]
    planners = keep_own_gate(_net(), labels, [Corner("tabular", 17, 64)], planners_only=True)
    np.testing.assert_allclose(planners.counts, [[0, 3, 0], [2 / 3, 2 / 3, 2 / 3], [2, 2, 2], [2, 2, 2]], rtol=1e-6)
    np.testing.assert_array_equal(labels.counts, counts)  # the labels given are left as they were
    held = keep_own_gate(_net(), labels, [Corner("tabular", 17, 64)], hold_weight=3.0)  # held slots count 3 times
    np.testing.assert_allclose(held.counts, [[0, 3, 0], [2, 0, 0], [6, 6, 6], [6, 6, 6]], rtol=1e-6)
    with pytest.raises(ValueError, match="nodes must be a range 1 <= LO <= HI, got 9-8"):
        Corner("tabular", 9, 8)
    with pytest.raises(ValueError, match="name at least one corner"):
        keep_own_gate(_net(), labels, [])
    with pytest.raises(ValueError, match="a corner's weight must be a finite number > 0, got 0"):
        Corner("tabular", 17, 64, 0.0)
    with pytest.raises(ValueError, match="corner workload 'nosuch' is not registered"):
        Corner("nosuch", 17, 64)
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="hold_weight must be a finite number > 0"):
            keep_own_gate(_net(), labels, [Corner("tabular", 17, 64)], hold_weight=bad)


def test_tune_gate_teaches_only_where_asked_and_refuses_a_bad_corner(tmp_path):
    checkpoint = save_checkpoint(_net(), tmp_path / "net.pt", {"forecaster": "wls"})
    inputs = np.random.default_rng(2).normal(size=(40, 16)).astype(np.float32)
    counts = np.zeros((40, 3), np.float32)
    counts[:, 1] = 2  # edf everywhere, but only the first 20 slots (big tabular) are taught
    GateLabels(inputs, counts, np.full(40, "tabular"), np.repeat([32, 8], 20)).save(tmp_path / "labels.npz")
    command = [sys.executable, "examples/tune_gate.py", "--checkpoint", str(checkpoint), "--labels",
               str(tmp_path / "labels.npz"), "--steps", "200", "--out", str(tmp_path / "o")]  # fmt: skip
    done = run_script([*command, "--teach-only", "tabular,17-64"])
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads((tmp_path / "o" / "report.json").read_text())
    assert report["teach_only"] == ["tabular,17-64"] and report["hold_weight"] == 1.0
    refit = load_checkpoint(tmp_path / "o" / "checkpoint.pt")[0]
    big, small = (
        GateLabels(inputs[s], counts[s], np.full(20, "tabular"), np.full(20, 32)) for s in (slice(20), slice(20, 40))
    )
    assert gate_agreement(refit, big) > 0.8  # taught: it now leads with edf
    with torch.no_grad():  # held: the small clusters' slots keep about the zero gate's even weights
        weights = torch.cat(refit.gate_weights(torch.from_numpy(small.inputs)), -1)
    assert weights.max() < 0.6
    both = [*command[:-1], str(tmp_path / "o2"), "--teach-only", "tabular,17-64", "--teach-only", "tabular,1-8,3"]
    done = run_script(both)  # two corners: every slot taught
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads((tmp_path / "o2" / "report.json").read_text())["teach_only"] == ["tabular,17-64", "tabular,1-8,3"]
    assert gate_agreement(load_checkpoint(tmp_path / "o2" / "checkpoint.pt")[0], small) > 0.8
    for flags, message in [
        (["--teach-only", "tabular,17"], "--teach-only wants WORKLOAD,LO-HI[,WEIGHT]"),
        (["--teach-only", "tabular,17-64,0"], "a finite weight > 0"),
        (["--teach-only", "nosuch,1-8"], "a registered workload"),
        (["--teach-planners-only"], "--teach-planners-only needs --teach-only"),
        (["--hold-weight", "4"], "--hold-weight needs --teach-only"),
        (["--teach-only", "tabular,17-64", "--hold-weight", "0"], "--hold-weight must be a finite number > 0"),
    ]:
        refused = run_script([*command, *flags])
        assert refused.returncode == 2 and message in refused.stderr, refused.stderr
    alone = [sys.executable, "examples/tune_gate.py", "--checkpoint", str(checkpoint), "--out", str(tmp_path / "p"),
             "--teach-only", "tabular,17-64"]  # fmt: skip
    refused = run_script(alone)
    assert refused.returncode == 2 and "--teach-only relabels saved --labels" in refused.stderr


def test_labels_record_the_encoder_that_read_them_and_a_refit_of_another_is_refused(tmp_path):
    checkpoint = save_checkpoint(_net(), tmp_path / "net.pt", SMALL_ENV)
    labels = label_own_play(checkpoint, SMALL_ENV, "best_shared", [0, 1], progress=False)
    assert labels.reader == part_digest(_net(), "encoder") and len(labels.reader) == 16
    labels.save(tmp_path / "labels.npz")
    assert GateLabels.load(tmp_path / "labels.npz").reader == labels.reader  # kept on disk
    labels.check_for(_net())  # the same encoder: let through
    other = _net()
    with torch.no_grad():
        other.slot_token.add_(1.0)  # another encoder, same widths
    with pytest.raises(ValueError, match="read by another encoder"):
        labels.check_for(other)
    fit_gate(other, _labels(labels.inputs, labels.counts), steps=3)  # a gate fit leaves the encoder as it was
    with pytest.raises(ValueError, match="read by another encoder"):
        labels.check_for(other)
    other_file = save_checkpoint(other, tmp_path / "other.pt", SMALL_ENV)
    command = [sys.executable, "examples/tune_gate.py", "--checkpoint", str(other_file), "--labels",
               str(tmp_path / "labels.npz"), "--out", str(tmp_path / "o")]  # fmt: skip
    refused = run_script(command)
    assert refused.returncode == 1 and "labels.npz: the labels' slot tokens were read by another" in refused.stderr
    assert not (tmp_path / "o").exists()
    assert GateLabels.concatenate([labels, _labels(labels.inputs, labels.counts)]).reader == ""  # mixed: unknown
    with pytest.raises(ValueError, match="inputs of width 16, this network's gate reads 18"):
        labels.check_for(_net(gate_context=True))


def test_tune_gate_joins_several_label_files_and_names_the_one_that_does_not_fit(tmp_path):
    checkpoint = save_checkpoint(_net(), tmp_path / "net.pt", {"forecaster": "wls"})
    rng = np.random.default_rng(3)
    counts = np.zeros((30, 3), np.float32)
    counts[:, 1] = 1
    for name in ("a", "b"):
        _labels(rng.normal(size=(30, 16)).astype(np.float32), counts).save(tmp_path / f"{name}.npz")
    command = [sys.executable, "examples/tune_gate.py", "--checkpoint", str(checkpoint), "--steps", "50", "--labels",
               str(tmp_path / "a.npz"), str(tmp_path / "b.npz")]  # fmt: skip
    done = run_script([*command, "--out", str(tmp_path / "o")])
    assert done.returncode == 0, done.stderr[-2000:]
    fitted = json.loads((tmp_path / "o" / "report.json").read_text())["rounds"][0]
    assert fitted["slots"] == 60 and fitted["labels"] == f"{tmp_path / 'a.npz'},{tmp_path / 'b.npz'}"
    _labels(np.zeros((5, 18), np.float32), counts[:5]).save(tmp_path / "wide.npz")
    refused = run_script([*command, str(tmp_path / "wide.npz"), "--out", str(tmp_path / "p")])
    assert (
        refused.returncode == 1
        and f"--labels: {tmp_path / 'wide.npz'}: the labels hold gate inputs of width 18" in (refused.stderr)
    )
    assert not (tmp_path / "p").exists()


def test_gate_rounds_can_start_at_a_later_scenario_and_stay_below_the_action_seeds(tmp_path):
    assert gate_seeds(3, 2) == [GATE_SEED_BASE + 3, GATE_SEED_BASE + 4]
    assert GATE_SEED_BASE + GATE_SEED_SPAN == ACTION_SEED_BASE  # the two kinds of rounds never share a scenario
    checkpoint = save_checkpoint(_net(), tmp_path / "net.pt", {"forecaster": "wls"})
    dagger_rounds(_net(), checkpoint, SMALL_ENV, "best_shared", None, tmp_path / "fit.pt", rounds=1, episodes=1,
                  steps=1, jobs=1, progress=False, labels_to=tmp_path / "labels.npz", first_episode=1)  # fmt: skip
    played = GateLabels.load(tmp_path / "labels.npz")
    expected = label_own_play(checkpoint, SMALL_ENV, "best_shared", [GATE_SEED_BASE + 1], progress=False)
    np.testing.assert_array_equal(played.inputs, expected.inputs)
    first = label_own_play(checkpoint, SMALL_ENV, "best_shared", [GATE_SEED_BASE], progress=False)
    assert first.inputs.shape != played.inputs.shape or not np.array_equal(first.inputs, played.inputs)
    for bad in (-1, GATE_SEED_SPAN):
        with pytest.raises(ValueError, match="first_episode must lie in"):
            dagger_rounds(_net(), checkpoint, SMALL_ENV, "best_shared", None, tmp_path / "x.pt", rounds=1, episodes=1,
                          first_episode=bad)  # fmt: skip


def test_tune_gate_refuses_a_first_episode_with_saved_labels_or_out_of_range(tmp_path):
    checkpoint = save_checkpoint(_net(), tmp_path / "net.pt", {"forecaster": "wls"})
    script = [sys.executable, "examples/tune_gate.py", "--checkpoint", str(checkpoint), "--out", str(tmp_path / "o")]
    for flags, message in (
        (["--first-episode", "5", "--labels", str(tmp_path / "l.npz")], "saved --labels play none"),
        (["--first-episode", "-1"], "--first-episode must lie in [0,"),
    ):
        done = run_script([*script, *flags])
        assert done.returncode == 2 and message in done.stderr, done.stderr
    assert not (tmp_path / "o").exists()
