"""benchmarks/gate_load_response.py: a gate's path weights as the arrival_rate input moves."""

from __future__ import annotations

import json
import sys

import pytest
import torch

from mara_agents.mara.checkpoint import save_checkpoint
from mara_agents.mara.gate_edits import pin_gate
from mara_agents.mara.slot_network import SlotMARANet
from tests.scripts import run_script

SCRIPT = [sys.executable, "benchmarks/gate_load_response.py"]
SMALL = ["--nodes", "4", "--slots", "5", "10", "--horizon", "20", "--rates", "0.01", "0.5"]


def _checkpoint(tmp_path, pin: str | None = None, **flags) -> str:
    torch.manual_seed(0)
    net = SlotMARANet(width=16, layers=1, heads=2, **flags)
    if net.hint_embed is not None:
        torch.nn.init.normal_(net.gate.weight)  # a gate that is not constant
    if pin is not None:
        net = pin_gate(net, pin)
    return str(save_checkpoint(net, tmp_path / "net.pt", {"forecaster": "wls"}))


def test_a_gate_blind_to_the_signal_gives_the_same_weights_at_every_rate(tmp_path):
    checkpoint = _checkpoint(tmp_path, planner_hints=True, pick_hints=True, uniform_pick=True)
    done = run_script([*SCRIPT, "--checkpoint", checkpoint, *SMALL, "--out", str(tmp_path / "g")])
    assert done.returncode == 0, done.stderr
    records = json.loads((tmp_path / "g.json").read_text())
    assert [(r["load"], r["slot"]) for r in records] == [("train", 5), ("train", 10), ("heavy", 5), ("heavy", 10)]
    for record in records:
        assert record["rates"][1:] == [0.01, 0.5]
        assert len(set(record["srw"])) == 1 and len(set(record["uniform"])) == 1  # it never reads arrival_rate
    assert "| heavy | 10 |" in (tmp_path / "g.md").read_text()


def test_a_checkpoint_without_a_gate_is_refused(tmp_path):
    done = run_script([*SCRIPT, "--checkpoint", _checkpoint(tmp_path), *SMALL])
    assert done.returncode == 2 and "has none" in done.stderr


def test_a_gate_that_reads_the_signal_moves_with_it(tmp_path):
    checkpoint = _checkpoint(tmp_path, planner_hints=True, pick_hints=True, uniform_pick=True, load_signal=True)
    done = run_script([*SCRIPT, "--checkpoint", checkpoint, *SMALL, "--out", str(tmp_path / "g")])
    assert done.returncode == 0, done.stderr
    records = json.loads((tmp_path / "g.json").read_text())
    assert any(len(set(r["srw"])) > 1 for r in records)


def test_own_play_reports_every_band_of_every_load_and_refuses_bad_bands(tmp_path):
    checkpoint = _checkpoint(tmp_path, planner_hints=True, pick_hints=True, uniform_pick=True)
    own = ["--checkpoint", checkpoint, "--own-play", "--nodes", "4", "--horizon", "20", "--seeds", "1"]
    done = run_script([*SCRIPT, *own, "--bands", "0", "10", "20", "--out", str(tmp_path / "o")])
    assert done.returncode == 0, done.stderr
    records = json.loads((tmp_path / "o.json").read_text())
    assert [(r["load"], r["slots"]) for r in records] == [("train", "0-9"), ("train", "10-19"), ("heavy", "0-9"),
                                                         ("heavy", "10-19")]  # fmt: skip
    assert all(0.0 <= float(r["srw led"]) <= 1.0 for r in records)
    for record in records:  # the rule names one path per slot (none in a band without a slot with a task)
        shares = sum(map(float, record["rule srw / edf / uniform"].split(" / ")))
        assert shares == pytest.approx(1.0 if int(record["slots with a task"]) else 0.0, abs=0.02)
    refused = run_script([*SCRIPT, *own, "--bands", "10", "0"])
    assert refused.returncode == 2 and "increasing --bands" in refused.stderr


@pytest.mark.parametrize("path", ["srw", "edf"])
def test_a_gate_pinned_on_one_path_follows_the_rule_where_the_rule_names_that_path(tmp_path, path):
    checkpoint = _checkpoint(tmp_path, pin=path, planner_hints=True, pick_hints=True, uniform_pick=True)
    # a small rl episode whose arrival rate crosses load_switch's (its table never crowds: no uniform slot)
    own = ["--checkpoint", checkpoint, "--own-play", "--workload", "rl", "--nodes", "4", "--horizon", "40"]
    own += ["--seeds", "1", "--loads", "extreme", "--bands", "0", "40", "--out", str(tmp_path / "o")]
    done = run_script([*SCRIPT, *own])
    assert done.returncode == 0, done.stderr
    (record,) = json.loads((tmp_path / "o.json").read_text())
    shares = dict(zip(("srw", "edf", "uniform"), map(float, record["rule srw / edf / uniform"].split(" / "))))
    assert record["srw led"] == ("1.00" if path == "srw" else "0.00")
    assert 0.2 < shares[path] < 0.8  # the rule names both paths here
    assert float(record["rule's path led"]) == pytest.approx(shares[path], abs=0.006)  # both rounded to 0.01
