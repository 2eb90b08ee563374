"""``mara bench``: outputs, resume, agent specs, bad input before any work, and the Ray backend."""

from __future__ import annotations

import csv
import hashlib
import json
from pathlib import Path

import pytest

from mara_agents import SCHEDULERS, BenchConfig, EDFScheduler, evaluate, load_agent, register
from mara_agents.cli import main
from tests.bench_agents import NODES, TinyEDF

ROOT = Path(__file__).resolve().parents[1]
GRID = ["--workloads", "synthetic", "--loads", "train", "heavy", "--seeds", "2", "--horizon", "60"]
GRID += ["--num-nodes", str(NODES), "--quiet"]
HERE = "tests.bench_agents"


def bench(out: Path, agents: list[str], *extra: str, grid: list[str] = GRID) -> int:
    """``mara bench`` in this process; the exit code, also when argparse exits."""
    try:
        return main(["bench", "--agents", *agents, *grid, "--out", str(out), *extra])
    except SystemExit as done:
        return int(done.code)


def rows(path: Path) -> list[dict]:
    """The records of ``results.json`` without their wall time (which no two runs share)."""
    return [{k: v for k, v in r.items() if k != "wall_seconds"} for r in json.loads(path.read_text())]


@pytest.fixture(autouse=True)
def _repo_root(monkeypatch):
    monkeypatch.chdir(ROOT)  # ``tests.bench_agents:...`` agents import from the repository root


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
    assert {"python", "numpy", "torch", "gymnasium", "pettingzoo", "mara", "mara_agents"} <= set(config["versions"])
    assert config["offered_loads"] == {"train": 1.4, "heavy": 2.1}
    assert config["git"] is None or len(config["git"]["commit"]) == 40  # this checkout's commit, when it is one
    assert config["run"]["cell_timeout"] == 600.0  # auto: 60 s x 2 seeds x (4 x 60)/(8 x 300), at least 600
    markdown = (out / "results.md").read_text()
    assert f"| {HERE}:TinyEDF | synthetic | heavy | " in markdown and "± " in markdown
    for png in ("completion_by_workload_load.png", "completion_vs_load.png", "gantt.png"):
        assert (out / png).stat().st_size > 5000
    assert json.loads((out / "failures.json").read_text()) == []
    unnamed = [{**r, "agent": "-"} for r in rows(out / "results.json")]
    assert unnamed[:4] == unnamed[4:]  # the module:Class agent (EDF) runs exactly like the registered edf

    summary = json.loads((out / "summary.json").read_text())
    assert [(s["agent"], s["load"]) for s in summary] == [("edf", "train"), ("edf", "heavy")] + [
        (f"{HERE}:TinyEDF", "train"),
        (f"{HERE}:TinyEDF", "heavy"),
    ]
    assert summary[0]["reference"] == "edf" and "diff" not in summary[0] and summary[0]["seeds"] == 2
    assert summary[2]["diff"]["completion_rate"] == {"mean": 0.0, "ci95": 0.0, "n": 2}  # EDF minus EDF, per seed
    with (out / "summary.csv").open() as fh:
        flat = list(csv.DictReader(fh))
    assert float(flat[1]["completion_rate_mean"]) == pytest.approx(summary[1]["completion_rate"]["mean"])
    assert flat[0]["completion_rate_diff_mean"] == "" and float(flat[3]["completion_rate_diff_mean"]) == 0.0

    cells = sorted((out / "cells").glob("*.json"))
    assert len(cells) == 4
    stamps = {p: p.stat().st_mtime_ns for p in cells}
    capsys.readouterr()
    assert bench(out, ["edf", f"{HERE}:TinyEDF", "uniform"], "--jobs", "1", "--reference", "uniform") == 0
    assert "6 cells: 2 run now, 4 reused, 0 failed" in capsys.readouterr().out
    assert all(p.stat().st_mtime_ns == t for p, t in stamps.items())  # finished cells were not rerun
    assert len(json.loads((out / "results.json").read_text())) == 3 * 2 * 2
    assert all("diff" in s for s in json.loads((out / "summary.json").read_text()) if s["agent"] != "uniform")


@pytest.mark.parametrize(
    "agents, flags, says",
    [
        (["edf"], ["--seeds", "0"], "argument --seeds: must be >= 1, got 0"),
        (["edf"], ["--workloads", "nope"], "unknown workload 'nope'"),
        (["edf"], ["--loads", "train", "nope"], "unknown load 'nope'"),
        (["edf"], ["--horizon", "0"], "argument --horizon: must be >= 1, got 0"),
        (["edf"], ["--seed-start", "-4"], "argument --seed-start: must be >= 0, got -4"),
        (["edf"], ["--cell-timeout", "0"], "argument --cell-timeout: must be > 0"),
        (["lra"], [], "unknown agent 'lra' (did you mean 'lara'?)"),
        (["no_such_module:Thing"], [], "cannot import module 'no_such_module'"),
        (["mara:runs/none/checkpoint.pt"], [], "checkpoint 'runs/none/checkpoint.pt' is not a file"),
        (["edf"], ["--reference", "lara"], "reference must be one of the agents ['edf'], got 'lara'"),
        (["edf"], ["--slot-seconds", "60"], "apply to a .csv trace only"),
        (["edf"], ["--faults", "mtbf=0,mttr=2"], "argument --faults: must be > 0"),
    ],
)
def test_bad_values_are_one_clear_line_and_exit_2_before_any_work(tmp_path, capsys, agents, flags, says):
    out = tmp_path / "run"
    assert bench(out, agents, *flags) == 2
    err = capsys.readouterr().err
    assert says in err and err.strip().splitlines()[-1].startswith("mara bench: error: ")
    assert not out.exists()


@pytest.mark.parametrize(
    "agent, says",
    [
        (f"{HERE}:Nope", f"module '{HERE}' has no attribute 'Nope'"),
        (f"{HERE}:not_a_scheduler", "returned a object, without reset(seed) and act(obs, agent)"),
    ],
)
def test_an_agent_that_cannot_be_built_stops_the_bench_before_the_output_folder(tmp_path, capsys, agent, says):
    out = tmp_path / "run"
    assert bench(out, ["edf", agent]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"agent '{agent}' cannot be created" in err[0] and says in err[0]
    assert not out.exists()


def test_out_naming_a_file_is_refused(tmp_path, capsys):
    taken = tmp_path / "file.txt"
    taken.write_text("mine")
    assert bench(taken, ["edf"]) == 2
    assert "out must be a folder, but" in capsys.readouterr().err and taken.read_text() == "mine"


def test_load_agent_errors_say_what_is_wrong():
    with pytest.raises(ValueError, match="cannot import module 'no_such_module'"):
        load_agent("no_such_module:Thing")
    with pytest.raises(ValueError, match="has no attribute 'Nope'"):
        load_agent(f"{HERE}:Nope")
    with pytest.raises(ValueError, match=r"unknown agent 'lra' \(did you mean 'lara'\?\)"):
        load_agent("lra")
    with pytest.raises(TypeError, match="not a class or function"):
        load_agent(f"{HERE}:NOT_CALLABLE")
    assert isinstance(load_agent(f"{HERE}:TinyEDF"), TinyEDF)


def test_a_registered_policy_takes_a_checkpoint_after_its_name():
    from mara_agents.mara.scheduler import SHIPPED_CHECKPOINT, MARAScheduler

    assert isinstance(load_agent(f"mara:{SHIPPED_CHECKPOINT}"), MARAScheduler)
    with pytest.raises(ValueError, match="the scheduler 'edf' takes no checkpoint"):
        load_agent(f"edf:{SHIPPED_CHECKPOINT}")


def test_register_refuses_a_taken_name_unless_told():
    with pytest.raises(ValueError, match="'edf' is already registered; pass overwrite=True"):
        register("edf", TinyEDF)
    with pytest.raises(ValueError, match="without ':'"):
        register("my:edf", TinyEDF)
    register("tiny_edf_test", TinyEDF)
    try:
        register("tiny_edf_test", EDFScheduler, overwrite=True)
        assert SCHEDULERS["tiny_edf_test"] is EDFScheduler
    finally:
        del SCHEDULERS["tiny_edf_test"]


def test_ray_backend_gives_the_numbers_and_failures_of_the_local_workers(tmp_path):
    ray = pytest.importorskip("ray")
    agents = ["lara", f"{HERE}:HangsAtSlot3"]
    grid = [*GRID[:3], "train", *GRID[5:]]  # one load
    ray.init(num_cpus=2, include_dashboard=False)
    try:
        assert bench(tmp_path / "ray", agents, "--ray", "--cell-timeout", "2", grid=grid) == 1
    finally:
        ray.shutdown()
    assert json.loads((tmp_path / "ray" / "config.json").read_text())["run"]["backend"] == "ray"
    here = evaluate("lara", [0, 1], workload="synthetic", load="train", horizon=60, num_nodes=NODES)
    labels = {"agent": "lara", "workload": "synthetic", "load": "train"}
    expected = [{**labels, **{k: v for k, v in r.items() if k != "wall_seconds"}} for r in here]
    assert rows(tmp_path / "ray" / "results.json") == expected  # the episodes of this process and of the workers
    (failed,) = json.loads((tmp_path / "ray" / "failures.json").read_text())
    assert failed["agent"] == f"{HERE}:HangsAtSlot3" and "seed 0, slot 3: timed out after 2 s" in failed["message"]


def test_cells_of_a_checkpoint_agent_are_keyed_by_its_contents(tmp_path):
    from mara_agents.mara.scheduler import SHIPPED_CHECKPOINT

    copy = tmp_path / "checkpoint.pt"
    copy.write_bytes(SHIPPED_CHECKPOINT.read_bytes())
    config = BenchConfig(agents=(f"mara:{copy}", "edf"), loads=("train",), seeds=1)
    ours, theirs = config.cells()
    assert ours.env_kwargs["checkpoint_sha256"] == hashlib.sha256(copy.read_bytes()).hexdigest()
    assert "checkpoint_sha256" not in theirs.env_kwargs
    copy.write_bytes(copy.read_bytes() + b"\0")  # retrained in place: another cell, not the saved one
    assert BenchConfig(agents=(f"mara:{copy}", "edf"), loads=("train",), seeds=1).cells()[0].key != ours.key


def test_cells_of_a_shipped_policy_are_keyed_by_its_weights(tmp_path, monkeypatch):
    """A release that ships other weights under the same name must not reuse the old name's cells."""
    from mara_agents.mara import scheduler

    config = BenchConfig(agents=("mara_generalist", "edf"), loads=("train",), seeds=1)
    shipped, heuristic = config.cells()
    digest = hashlib.sha256(scheduler.GENERALIST_CHECKPOINT.read_bytes()).hexdigest()
    assert shipped.env_kwargs["checkpoint_sha256"] == digest and "checkpoint_sha256" not in heuristic.env_kwargs
    retrained = tmp_path / "mara_generalist.pt"
    retrained.write_bytes(scheduler.GENERALIST_CHECKPOINT.read_bytes() + b"\0")
    monkeypatch.setattr(scheduler, "GENERALIST_CHECKPOINT", retrained)
    assert config.cells()[0].key != shipped.key and config.cells()[1].key == heuristic.key


def test_summary_pairs_by_seed_and_leaves_a_failed_reference_out():
    from mara_agents.bench.summary import summary_rows

    def cell(agent: str, load: str, rates: list[float]) -> dict:
        records = [{"seed": s, "completion_rate": r, "completed": 1} for s, r in zip((3, 4, 5), rates)]
        return {"cell": {"agent": agent, "workload": "synthetic", "load": load}, "records": records}

    config = BenchConfig(agents=("ref", "new"), loads=("train", "heavy"), seeds=3, seed_start=3)
    done = [cell("ref", "train", [0.5, 0.6, 0.7]), cell("new", "train", [0.6, 0.8, 0.7])]
    done.append(cell("new", "heavy", [0.1] * 3))
    rows = {(r["agent"], r["load"]): r for r in summary_rows(config, done)}
    diff = rows[("new", "train")]["diff"]["completion_rate"]
    assert diff["mean"] == pytest.approx(0.1) and diff["n"] == 3
    assert diff["ci95"] == pytest.approx(4.303 * 0.1 / 3**0.5)  # t(2) x sd of (0.1, 0.2, 0.0) / sqrt(3)
    assert rows[("new", "heavy")]["diff"] is None  # the reference's cell failed: nothing to pair with


def test_a_base_class_scheduler_reading_forecasts_gets_them_in_the_bench(tmp_path):
    out = tmp_path / "forecasts"
    assert (
        bench(
            out,
            [f"{HERE}:ShortestForecast"],
            "--jobs",
            "1",
            grid=["--loads", "train", "--seeds", "1", "--horizon", "60", "--num-nodes", str(NODES)],
        )
        == 0
    )
    config = json.loads((out / "config.json").read_text())
    assert config["agent_env"][f"{HERE}:ShortestForecast"]["forecaster"] == "flow"
    assert json.loads((out / "failures.json").read_text()) == []


def test_an_agent_spec_can_name_the_forecaster_it_plays_on(tmp_path):
    """``srw@wls`` is srw on wls forecasts: the episodes of ``evaluate("srw", forecaster="wls")``."""
    on_wls = load_agent("srw@wls")
    assert on_wls.requirements.forecaster == "wls" and load_agent("srw").requirements.forecaster is None
    env = dict(workload="synthetic", load="heavy", horizon=60, num_nodes=NODES)

    def played(agent: str, **forecaster: str) -> list[dict]:
        records = evaluate(agent, [0, 1], **env, **forecaster)
        return [{k: v for k, v in r.items() if k != "wall_seconds"} for r in records]

    assert played("srw@wls") == played("srw", forecaster="wls")
    assert played("srw@wls") != played("srw", forecaster="dkf")
    grid = ["--loads", "heavy", "--seeds", "1", "--horizon", "30", "--num-nodes", str(NODES), "--quiet"]
    assert bench(tmp_path / "b", ["srw", "srw@wls"], "--jobs", "1", grid=grid) == 0
    agent_env = json.loads((tmp_path / "b" / "config.json").read_text())["agent_env"]
    assert agent_env["srw"]["forecaster"] == "flow" and agent_env["srw@wls"]["forecaster"] == "wls"


def test_a_forecaster_in_an_agent_spec_is_checked():
    from mara_agents.registry import check_spec, split_forecaster

    with pytest.raises(ValueError, match="'edf' reads no forecasts, so @flow would change nothing"):
        load_agent("edf@flow")
    for bad in ("srw@flwo", "@flow", "srw@none"):
        with pytest.raises(ValueError, match=r"after '@' name a forecaster of \['dkf'"):
            load_agent(bad)
    assert split_forecaster("mara:runs/a@b/x.pt") == ("mara:runs/a@b/x.pt", None)  # an @ in a path
    assert split_forecaster("mara:x.pt@flow_situ_fixed") == ("mara:x.pt", "flow_situ_fixed")
    # one forecaster per spec: a second ending is no agent name, and the message shows the spec as given
    with pytest.raises(ValueError, match=r"unknown agent 'srw@flow@flow'"):
        check_spec("srw@flow@flow")
    check_spec("srw@flow")
