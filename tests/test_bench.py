"""``mara bench``: outputs, resume, ``module:Class`` agents, failures, bad input and the Ray backend."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

import numpy as np
import pytest

from mara_agents import EDFScheduler, load_agent
from mara_agents.cli import main

ROOT = Path(__file__).resolve().parents[1]
NODES = 4
GRID = ["--workloads", "synthetic", "--loads", "train", "heavy", "--seeds", "2", "--horizon", "60"]
GRID += ["--num-nodes", str(NODES), "--quiet"]
HERE = "tests.test_bench"


class TinyEDF(EDFScheduler):
    """A ``module:Class`` agent: the packaged EDF under another name, so it must give EDF's numbers."""


class RaisesAtSlot3(EDFScheduler):
    """Raises at its first turn of slot 3 while ``fail`` is set."""

    fail = True

    def reset(self, seed: int | None = None) -> None:
        super().reset(seed)
        self.turns = 0

    def act(self, observation: dict, agent: str) -> int:
        self.turns += 1
        if self.fail and self.turns > 3 * NODES:
            raise RuntimeError("scheduler bug")
        return super().act(observation, agent)


class MaskedAction(EDFScheduler):
    """Always picks the first masked action (an empty row), which the env rejects."""

    def act(self, observation: dict, agent: str) -> int:
        masked = np.flatnonzero(np.asarray(observation["action_mask"]) == 0)
        return int(masked[0]) if masked.size else 0


class DiesHard(EDFScheduler):
    """Kills its worker process, as a crash in native code would (only ever run in a pool)."""

    def act(self, observation: dict, agent: str) -> int:
        os._exit(3)


def bench(out: Path, agents: list[str], *extra: str) -> int:
    """``mara bench`` in this process; the exit code, also when argparse exits."""
    try:
        return main(["bench", "--agents", *agents, *GRID, "--out", str(out), *extra])
    except SystemExit as done:
        return int(done.code)


def rows(path: Path) -> list[dict]:
    """The records of ``results.json`` without their wall time (which no two runs share)."""
    return [{k: v for k, v in r.items() if k != "wall_seconds"} for r in json.loads(path.read_text())]


@pytest.fixture(autouse=True)
def _repo_root(monkeypatch):
    monkeypatch.chdir(ROOT)  # ``tests.test_bench:...`` agents import from the repository root


def test_outputs_have_the_documented_shape_and_a_rerun_resumes(tmp_path, capsys):
    out = tmp_path / "run"
    assert bench(out, ["edf", f"{HERE}:TinyEDF"], "--jobs", "2") == 0
    records = json.loads((out / "results.json").read_text())
    assert len(records) == 2 * 2 * 2
    assert {"agent", "workload", "load", "seed", "completion_rate", "wasted_work"} <= set(records[0])
    assert [r["seed"] for r in records[:2]] == [0, 1]
    with (out / "results.csv").open() as fh:
        table = list(csv.DictReader(fh))
    assert len(table) == len(records) and table[0]["agent"] == "edf" and table[0]["load"] == "train"
    config = json.loads((out / "config.json").read_text())
    assert config["seeds"] == [0, 1] and config["config"]["horizon"] == 60
    assert {"python", "numpy", "torch", "gymnasium", "pettingzoo", "mara"} <= set(config["versions"])
    assert config["offered_loads"] == {"train": 1.4, "heavy": 2.1}
    markdown = (out / "results.md").read_text()
    assert f"| {HERE}:TinyEDF | synthetic | heavy | " in markdown and "± " in markdown
    for png in ("completion_by_workload_load.png", "completion_vs_load.png", "gantt.png"):
        assert (out / png).stat().st_size > 5000
    assert json.loads((out / "failures.json").read_text()) == []
    unnamed = [{**r, "agent": "-"} for r in rows(out / "results.json")]
    assert unnamed[:4] == unnamed[4:]  # the module:Class agent (EDF) runs exactly like the registered edf

    cells = sorted((out / "cells").glob("*.json"))
    assert len(cells) == 4
    stamps = {p: p.stat().st_mtime_ns for p in cells}
    capsys.readouterr()
    assert bench(out, ["edf", f"{HERE}:TinyEDF", "uniform"], "--jobs", "1") == 0
    assert "6 cells: 2 run now, 4 reused, 0 failed" in capsys.readouterr().out
    assert all(p.stat().st_mtime_ns == t for p, t in stamps.items())  # finished cells were not rerun
    assert len(json.loads((out / "results.json").read_text())) == 3 * 2 * 2
    assert bench(out, ["edf", f"{HERE}:TinyEDF", "uniform"], "--jobs", "2") == 0
    assert "6 cells: 0 run now, 6 reused, 0 failed" in capsys.readouterr().out


def test_failures_name_agent_seed_and_slot_other_cells_run_and_a_rerun_retries(tmp_path, capsys, monkeypatch):
    out = tmp_path / "run"
    agents = ["edf", f"{HERE}:RaisesAtSlot3", f"{HERE}:MaskedAction", "no_such_agent", "no_such_module:Thing"]
    assert bench(out, agents, "--jobs", "1") == 1
    failures = json.loads((out / "failures.json").read_text())
    assert len(failures) == 4 * 2
    message = {f["agent"]: f["message"] for f in failures}
    raised = message[f"{HERE}:RaisesAtSlot3"]
    assert f"agent '{HERE}:RaisesAtSlot3', workload 'synthetic', load" in raised
    assert "seed 0, slot 3, node_0: RuntimeError: scheduler bug" in raised
    masked = message[f"{HERE}:MaskedAction"]
    assert "seed 0, slot 0, node_0: InvalidActionError" in masked and "is masked" in masked
    unknown = message["no_such_agent"]
    assert "agent 'no_such_agent' cannot be created" in unknown and "unknown scheduler" in unknown
    assert "cannot import module 'no_such_module'" in message["no_such_module:Thing"]
    assert {f["slot"] for f in failures if f["agent"] == f"{HERE}:RaisesAtSlot3"} == {3}
    assert {r["agent"] for r in json.loads((out / "results.json").read_text())} == {"edf"}
    assert len(list((out / "cells").glob("*.json"))) == 2
    err = capsys.readouterr().err
    assert err.count("agent 'no_such_agent' cannot be created") == 1 and "slot 3" in err

    monkeypatch.setattr(RaisesAtSlot3, "fail", False)
    assert bench(out, ["edf", f"{HERE}:RaisesAtSlot3"], "--jobs", "1") == 0
    assert "4 cells: 2 run now, 2 reused, 0 failed" in capsys.readouterr().out
    assert json.loads((out / "failures.json").read_text()) == []


def test_a_worker_that_dies_fails_only_its_own_cells(tmp_path, capsys):
    out = tmp_path / "run"
    assert bench(out, ["edf", f"{HERE}:DiesHard", "uniform"], "--jobs", "2") == 1
    failures = json.loads((out / "failures.json").read_text())
    assert {f["agent"] for f in failures} == {f"{HERE}:DiesHard"} and len(failures) == 2
    assert "worker process died" in failures[0]["message"]
    assert {r["agent"] for r in json.loads((out / "results.json").read_text())} == {"edf", "uniform"}


@pytest.mark.parametrize(
    "flags, says",
    [
        (["--seeds", "0"], "seeds must be an integer >= 1, got 0"),
        (["--workloads", "nope"], "unknown workload 'nope'"),
        (["--loads", "train", "nope"], "unknown load 'nope'"),
        (["--horizon", "0"], "horizon must be an integer >= 1"),
    ],
)
def test_bad_values_are_one_clear_line_and_exit_2_before_any_work(tmp_path, capsys, flags, says):
    out = tmp_path / "run"
    assert bench(out, ["edf"], *flags) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and says in err
    assert not out.exists()


def test_load_agent_errors_say_what_is_wrong():
    with pytest.raises(ValueError, match="cannot import module 'no_such_module'"):
        load_agent("no_such_module:Thing")
    with pytest.raises(ValueError, match="has no attribute 'Nope'"):
        load_agent(f"{HERE}:Nope")
    with pytest.raises(ValueError, match=r"unknown scheduler; use one of \[.*'edf'"):
        load_agent("no_such_agent")
    with pytest.raises(TypeError, match="not a class or function"):
        load_agent(f"{HERE}:NODES")
    assert isinstance(load_agent(f"{HERE}:TinyEDF"), TinyEDF)


def test_ray_backend_gives_the_numbers_of_the_process_pool(tmp_path):
    ray = pytest.importorskip("ray")
    agents = ["edf", "lara", f"{HERE}:TinyEDF"]
    assert bench(tmp_path / "pool", agents, "--jobs", "2") == 0
    ray.init(num_cpus=2, include_dashboard=False)
    try:
        assert bench(tmp_path / "ray", agents, "--ray") == 0
    finally:
        ray.shutdown()
    assert json.loads((tmp_path / "ray" / "config.json").read_text())["run"]["backend"] == "ray"
    assert rows(tmp_path / "ray" / "results.json") == rows(tmp_path / "pool" / "results.json")
