"""A network between two checkpoints: ``weight_interpolation`` and ``examples/interpolate_weights.py``."""

from __future__ import annotations

import sys

import pytest
import torch

from mara_agents.mara.checkpoint import load_checkpoint, save_checkpoint
from mara_agents.mara.slot_network import SlotMARANet
from mara_agents.mara.weight_interpolation import interpolate
from tests.scripts import run_script

ENV = {"num_nodes": 4, "max_tasks": 8, "forecaster": "wls"}


def _filled(value: float, **flags) -> SlotMARANet:
    net = SlotMARANet(width=16, layers=1, heads=2, planner_hints=True, **flags)
    with torch.no_grad():
        for parameter in net.parameters():
            parameter.fill_(value)
    return net


def test_every_weight_lies_on_the_line_between_the_two():
    a, b = _filled(0.0), _filled(2.0)
    quarter = interpolate(a, b, 0.25)
    assert all(torch.equal(value, torch.full_like(value, 0.5)) for value in quarter.parameters())  # 0 + 0.25 * 2
    assert all(torch.equal(x, y) for x, y in zip(interpolate(a, b, 0).parameters(), a.parameters(), strict=True))
    assert all(torch.equal(x, y) for x, y in zip(interpolate(a, b, 1).parameters(), b.parameters(), strict=True))
    assert all(torch.equal(value, torch.zeros_like(value)) for value in a.parameters())  # the inputs are left alone
    assert all(torch.equal(value, torch.full_like(value, 2.0)) for value in b.parameters())


def test_other_architectures_and_bad_alphas_are_refused_by_name():
    with pytest.raises(ValueError, match="the networks differ in gate_context"):
        interpolate(_filled(0.0), _filled(1.0, gate_context=True), 0.5)
    for alpha in (-0.1, 1.5, float("nan"), True, "0.5"):
        with pytest.raises(ValueError, match="alpha must be a number in"):
            interpolate(_filled(0.0), _filled(1.0), alpha)


def test_the_script_writes_the_copy_and_records_where_it_lies(tmp_path):
    start = save_checkpoint(_filled(0.0), tmp_path / "a.pt", ENV)
    end = save_checkpoint(_filled(4.0), tmp_path / "b.pt", {**ENV, "workload": "tabular"}, {"run": "b"})
    script = [sys.executable, "examples/interpolate_weights.py", "--start", str(start), "--end", str(end)]
    done = run_script([*script, "--alpha", "0.75", "--out", str(tmp_path / "m.pt")])
    assert done.returncode == 0, done.stderr[-2000:]
    net, env, extra = load_checkpoint(tmp_path / "m.pt")
    assert all(torch.equal(value, torch.full_like(value, 3.0)) for value in net.parameters())
    assert env["workload"] == "tabular" and extra["run"] == "b"  # the end's env and records are kept
    assert extra["interpolated"] == {"start": str(start), "end": str(end), "alpha": 0.75}
    refused = run_script([*script, "--alpha", "0.5", "--out", str(end)])
    assert refused.returncode == 2 and "--out must not be --start or --end" in refused.stderr
    other = save_checkpoint(_filled(1.0, gate_context=True), tmp_path / "c.pt", ENV)
    refused = run_script([*script[:4], "--end", str(other), "--alpha", "0.5", "--out", str(tmp_path / "n.pt")])
    assert refused.returncode == 2 and "differ in gate_context" in refused.stderr and not (tmp_path / "n.pt").exists()
