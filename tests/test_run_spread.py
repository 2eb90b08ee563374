"""benchmarks/run_spread.py: per-cell paired differences between runs, by hand from small record files."""

import importlib.util
import json
import subprocess
import sys

import pytest

from tests.scripts import ROOT, load_script

bench = load_script("benchmarks/run_spread.py")


def _record(agent, workload, nodes, seed, rate, trace=False):
    return {"agent": agent, "workload": workload, "load": "heavy", "nodes": nodes, "trace": trace, "seed": seed,
            "completion_rate": rate}  # fmt: skip


def _write(path, records):
    path.write_text(json.dumps(records))
    return str(path)


@pytest.fixture
def files(tmp_path):
    """A reference (`ref`) and a run (`new`) on vision M4 (3 seeds), tabular M8 (3 seeds; the run has a
    fourth) and a 32-node trace; the reference alone has rl M4."""
    reference = [
        *(_record("ref", "vision", 4, s, r) for s, r in [(0, 0.5), (1, 0.6), (2, 0.4)]),
        *(_record("ref", "tabular", 8, s, 0.7) for s in range(3)),
        *(_record("ref", "mixed", 32, s, 0.5, trace=True) for s in range(3)),
        _record("ref", "rl", 4, 0, 0.3),
    ]
    run = [
        *(_record("new", "vision", 4, s, r) for s, r in [(0, 0.6), (1, 0.8), (2, 0.55)]),
        *(_record("new", "tabular", 8, s, 0.6) for s in range(4)),
        *(_record("new", "mixed", 32, s, r, trace=True) for s, r in [(0, 0.5), (1, 0.6), (2, 0.4)]),
    ]
    return _write(tmp_path / "ref.json", reference), _write(tmp_path / "new.json", run)


def _run(tmp_path, *args):
    command = [sys.executable, str(ROOT / "benchmarks/run_spread.py"), "--out", str(tmp_path / "s.md"), *args]
    return subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, timeout=120)


def test_differences_by_hand(tmp_path, files):
    reference, run = files
    result = _run(tmp_path, "--reference", f"seed 0={reference}:ref", "--run", f"seed 1={run}:new")
    assert result.returncode == 0, result.stderr
    rows = {(r["workload"], r["nodes"]): r for r in json.loads((tmp_path / "s.json").read_text())}
    assert set(rows) == {("vision", 4), ("tabular", 8), ("trace", 32)}  # rl M4 is the reference's alone
    # vision M4: +0.1, +0.2, +0.15 -> mean 0.15, sd 0.05, half-width 4.303 * 0.05 / sqrt(3) = 0.1242
    assert rows[("vision", 4)]["mean"] == pytest.approx(0.15)
    assert rows[("vision", 4)]["ci95"] == pytest.approx(4.303 * 0.05 / 3**0.5)
    # tabular M8: -0.1 on the three shared seeds (the run's fourth seed has no partner)
    assert rows[("tabular", 8)]["mean"] == pytest.approx(-0.1) and rows[("tabular", 8)]["n"] == 3
    assert rows[("trace", 32)]["mean"] == pytest.approx(0.0)
    report = (tmp_path / "s.md").read_text()
    # mean over cells (+15 - 10 + 0) / 3 = +1.67, sd over cells 12.58; one cell below, one above
    assert "| seed 1 | 3 | +1.67 | 12.58 | 1 | 1 | M4 vision heavy: +15.0 ± 12.4 |" in report
    assert "| M8 tabular heavy | **-10.0 ± 0.0** |" in report
    assert "| M32 trace | +0.0 ± 24.8 |" in report
    if importlib.util.find_spec("matplotlib"):  # the figure, where it can be drawn
        assert (tmp_path / "s.png").stat().st_size > 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--run", "{run}:new"], "a name for the run first"),
        (["--run", "seed 0={run}:new"], "every run needs its own name"),
        (["--run", "seed 1={run}:nobody"], "no records of ['nobody']"),
    ],
)
def test_refusals(tmp_path, files, args, message):
    reference, run = files
    args = [a.format(run=run) for a in args]
    result = _run(tmp_path, "--reference", f"seed 0={reference}:ref", *args)
    assert result.returncode != 0 and message in result.stderr, result.stderr
    assert not (tmp_path / "s.md").exists()


@pytest.mark.parametrize(("nodes", "seed"), [(8, 0), (4, 1)])  # another cell; the same cell, another seed
def test_nothing_shared(tmp_path, nodes, seed):
    reference = _write(tmp_path / "a.json", [_record("a", "vision", 4, 0, 0.5)])
    run = _write(tmp_path / "b.json", [_record("b", "vision", nodes, seed, 0.5)])
    result = _run(tmp_path, "--reference", f"a={reference}:a", "--run", f"b={run}:b")
    assert result.returncode != 0 and "share no cell and seed" in result.stderr
