"""benchmarks/lead_by_size.py: per-size figures by hand from small record files, sources and refusals."""

import json
import subprocess
import sys

import pytest

from tests.scripts import ROOT, load_script

bench = load_script("benchmarks/lead_by_size.py")


def _record(agent, workload, nodes, seed, rate, wasted=0.0, util=1.0):
    return {"agent": agent, "workload": workload, "load": "heavy", "nodes": nodes, "trace": False, "seed": seed,
            "completion_rate": rate, "wasted_work": wasted, "utilisation": util, "upper_bound_rate": 0.9}  # fmt: skip


def _write(path, records):
    path.write_text(json.dumps(records))
    return path


@pytest.fixture
def files(tmp_path):
    """MARA at M = 4 (labelled `mine`) and M = 32 (labelled `ckpt`, another file); `srw` and `edf` in a third."""
    small = [_record("mine", "vision", 4, s, r, wasted=0.2) for s, r in [(0, 0.6), (1, 0.5)]]
    big = [_record("ckpt", "vision", 32, s, r, wasted=0.3) for s, r in [(0, 0.5), (1, 0.5)]]
    others = [
        *(_record("srw", "vision", 4, s, r, wasted=0.4) for s, r in [(0, 0.5), (1, 0.3)]),  # best at 4
        *(_record("edf", "vision", 4, s, 0.2) for s in (0, 1)),
        *(_record("srw", "vision", 32, s, 0.4) for s in (0, 1)),
        *(_record("edf", "vision", 32, s, r, wasted=0.5) for s, r in [(0, 0.6), (1, 0.5)]),  # best at 32
    ]
    named = [("s.json", small), ("b.json", big), ("o.json", others)]
    return tuple(_write(tmp_path / name, records) for name, records in named)


def _run(tmp_path, *args):
    command = [sys.executable, str(ROOT / "benchmarks/lead_by_size.py"), "--out", str(tmp_path / "r.md"), *args]
    return subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, timeout=120)


def test_per_size_figures_by_hand(tmp_path, files):
    small, big, others = files
    result = _run(
        tmp_path, "--mara", f"{small}:mine", f"{big}:ckpt", "--others-from", str(others), "--agents", "srw", "edf"
    )
    assert result.returncode == 0, result.stderr
    rows = {r["nodes"]: r for r in json.loads((tmp_path / "r.json").read_text())}
    # M = 4: MARA 0.6, 0.5 against srw 0.5, 0.3: +0.1, +0.2 -> +0.15; M = 32: 0.5, 0.5 against edf 0.6, 0.5 -> -0.05
    assert rows[4]["best"] == "srw" and rows[4]["diff"]["mean"] == pytest.approx(0.15)
    assert rows[32]["best"] == "edf" and rows[32]["diff"]["mean"] == pytest.approx(-0.05)
    assert rows[4]["mara"]["wasted_work"] == pytest.approx(0.2)
    assert rows[4]["other"]["wasted_work"] == pytest.approx(0.4)
    assert rows[32]["other"]["wasted_work"] == pytest.approx(0.5)
    report = (tmp_path / "r.md").read_text()
    assert "| 4 | 1 | 2 | +15.0 | 0 | 0 | 0.200 | 0.400 |" in report
    assert "| vision | +15.0 | -5.0 |" in report


def test_a_label_may_hold_colons_and_the_file_must_be_json():
    assert bench.parse_source("a/b.json.gz:mara:runs/x.pt") == (bench.Path("a/b.json.gz"), "mara:runs/x.pt")
    with pytest.raises(bench.argparse.ArgumentTypeError, match="FILE.json"):
        bench.parse_source("records.csv:mara")


@pytest.mark.parametrize(
    "case, message",
    [
        ("twice", "in more than one source"),
        ("missing", "edf at vision/heavy, M=4 has no records"),
        ("oracle", "cannot be a best other scheduler"),
    ],
)
def test_refusals_name_the_problem(tmp_path, files, case, message):
    small, big, others = files
    mara = [f"{small}:mine", f"{big}:ckpt"] + ([f"{small}:mine"] if case == "twice" else [])
    if case == "missing":
        records = [r for r in json.loads(others.read_text()) if not (r["agent"] == "edf" and r["nodes"] == 4)]
        _write(others, records)
    agents = ["srw", "edf"] + (["oracle"] if case == "oracle" else [])
    result = _run(tmp_path, "--mara", *mara, "--others-from", str(others), "--agents", *agents)
    assert result.returncode != 0 and message in result.stderr, result.stderr
