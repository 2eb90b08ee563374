"""The ``mara`` command line: one argparse-style line for every mistake, before any work; ``compare``
and ``bench`` take the same agents and env options and give the same numbers; ``--version``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import mara_agents
import mara_env
from mara_agents.cli import main
from tests.test_bench import HERE, ROOT, bench

SMALL = ["--seeds", "2", "--horizon", "40", "--num-nodes", "4", "--quiet"]


def run(capsys, *argv: str) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as done:
        code = int(done.code)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture(autouse=True)
def _repo_root(monkeypatch):
    monkeypatch.chdir(ROOT)


@pytest.mark.parametrize(
    "argv, says",
    [
        (["describe", "--num-nodes", "-2"], "mara describe: error: argument --num-nodes: must be >= 1, got -2"),
        (["describe", "--horizon", "0"], "mara describe: error: argument --horizon: must be >= 1, got 0"),
        (["compare", "--seed-start", "-4"], "mara compare: error: argument --seed-start: must be >= 0, got -4"),
        (["compare", "--seeds", "1.5"], "argument --seeds: expected an integer, got '1.5'"),
        (["compare", "--horizon", "nan"], "argument --horizon: expected an integer"),
        (["compare", "--switch-cost", "1"], "argument --switch-cost: must be >= 0 and <= 0.999, got 1"),
        (
            ["compare", "--json", "/nonexistent/x.json"],
            "mara compare: error: --json: folder '/nonexistent' does not exist",
        ),
        (["compare", "--agents", "lra"], "unknown agent 'lra' (did you mean 'lara'?)"),
        (["compare", "--load", "hevy"], "unknown load 'hevy'"),
        (["forecast-eval", "--tasks", "0"], "mara: error: forecast-eval: argument --tasks: must be >= 1, got 0"),
        (
            ["forecast-eval", "--prefixes", "0.5", "1.5"],
            "argument --prefixes: each must be a fraction in (0, 1), got [1.5]",
        ),
        (["compare", "--trace-columns", "gpus"], "argument --trace-columns: trace columns must be OURS=THEIRS pairs"),
    ],
)
def test_mistakes_are_one_line_before_any_work(capsys, argv, says):
    code, out, err = run(capsys, *argv)
    assert code == 2 and says in err.strip().splitlines()[-1] and out == ""


def test_version_of_the_command_and_both_packages(capsys):
    code, out, _ = run(capsys, "--version")
    assert code == 0 and out.strip() == f"mara {mara_env.__version__}"
    assert mara_agents.__version__ == mara_env.__version__


def test_compare_and_bench_give_the_same_numbers_for_the_same_agents_and_env(tmp_path, capsys):
    env = ["--switch-cost", "0.2", "--arrivals", "bursty", "--curve-split", "val", "--faults", "mtbf=30,mttr=3"]
    agents = ["edf", f"{HERE}:TinyEDF"]
    json_path = tmp_path / "compare.json"
    code, out, _ = run(
        capsys, "compare", "--agents", *agents, "--load", "heavy", *SMALL, *env, "--json", str(json_path)
    )
    assert code == 0 and f"| {HERE}:TinyEDF | " in out and "nan" not in out
    compared = json.loads(json_path.read_text())
    grid = ["--workloads", "synthetic", "--loads", "heavy", *SMALL, *env, "--jobs", "1"]
    assert bench(tmp_path / "bench", agents, grid=grid) == 0
    benched = json.loads((tmp_path / "bench" / "results.json").read_text())
    drop = ("agent", "workload", "load", "wall_seconds")
    for agent in agents:
        mine = [{k: v for k, v in r.items() if k not in drop} for r in benched if r["agent"] == agent]
        theirs = [{k: v for k, v in r.items() if k != "wall_seconds"} for r in compared["records"][agent]]
        assert mine == theirs
    assert compared["config"]["faults"] == {"mtbf": 30.0, "mttr": 3.0} and compared["config"]["arrivals"] == "bursty"


def test_compare_with_a_horizon_too_short_for_any_task_prints_no_nan(capsys):
    code, out, err = run(capsys, "compare", "--agents", "edf", "--seeds", "1", "--horizon", "5", "--quiet")
    assert code == 0 and "nan" not in out and "± n/a" in out  # one seed: no interval
    code, out, err = run(capsys, "compare", "--agents", "edf", "--seeds", "3", "--horizon", "1", "--quiet")
    assert code == 0 and "nan" not in out and "no task arrived within --horizon 1 in any episode" in err


def test_bench_replays_a_trace_with_its_own_column_names(tmp_path, capsys):
    trace = tmp_path / "trace.csv"
    lines = ["submission_time,num_gpu,duration"] + [f"{60 * i},{1 + i % 3},{600 + 30 * i}" for i in range(12)]
    trace.write_text("\n".join(lines) + "\n")
    columns = "submit_time=submission_time,gpus=num_gpu"
    grid = ["--workloads", "synthetic", *SMALL, "--jobs", "1", "--arrivals", str(trace), "--trace-columns", columns]
    assert bench(tmp_path / "run", ["edf"], "--slot-seconds", "60", grid=grid) == 0
    records = json.loads((tmp_path / "run" / "results.json").read_text())
    assert len(records) == 2 and records[0]["load"] == "train" and records[0]["arrived"] > 0
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    arrivals = config["env_kwargs"]["arrivals"]
    assert arrivals["trace"] == str(trace) and arrivals["slot_seconds"] == 60.0
    assert {"submit_time": "submission_time", "gpus": "num_gpu"}.items() <= arrivals["columns"].items()
    assert "the load does not apply" in (tmp_path / "run" / "results.md").read_text()
    code, _, err = run(capsys, "bench", "--agents", "edf", "--arrivals", str(trace), "--loads", "train", "heavy",
                       "--out", str(tmp_path / "two"))  # fmt: skip
    assert code == 2 and "loads do not apply to a trace" in err and not Path(tmp_path / "two").exists()
