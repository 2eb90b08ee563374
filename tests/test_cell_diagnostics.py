"""benchmarks/cell_diagnostics.py: cell means by hand, cells told apart by size and trace, refusals."""

import gzip
import json
import sys

import pytest

from tests.scripts import ROOT, load_script, run_script


def _row(agent, workload, load, nodes, rate, trace=False, **extra):
    metrics = {"wasted_work": 0.5, "switches_per_task": 2.0, "utilisation": 0.9, "mean_failure_shortfall": 0.3}
    return {"agent": agent, "workload": workload, "load": load, "nodes": nodes, "trace": trace,
            "completion_rate": rate, **metrics, **extra}  # fmt: skip


ROWS = [
    _row("edf", "rl", "heavy", 8, 0.4),
    _row("edf", "rl", "heavy", 8, 0.6, wasted_work=0.1),
    _row("edf", "rl", "heavy", 32, 0.9),  # another size
    _row("edf", "mixed", "train", 32, 0.7),
    _row("edf", "mixed", "train", 32, 0.2, trace=True),  # the trace replays mixed curves at the train preset
]


def test_cell_means_by_hand_and_by_size():
    module = load_script("benchmarks/cell_diagnostics.py")
    at_8 = module.cell_means(ROWS, ("rl", "heavy", 8), "edf")
    assert at_8["seeds"] == 2 and at_8["completion_rate"] == pytest.approx(0.5)
    assert at_8["wasted_work"] == pytest.approx(0.3)  # (0.1 + 0.5) / 2
    assert module.cell_means(ROWS, ("rl", "heavy", None), "edf")["completion_rate"] == pytest.approx(1.9 / 3)
    assert module.cell_means(ROWS, ("rl", "heavy", 8), "srw") is None


def test_the_trace_is_not_mixed_train():
    module = load_script("benchmarks/cell_diagnostics.py")
    assert module.cell_means(ROWS, ("mixed", "train", None), "edf")["completion_rate"] == pytest.approx(0.7)
    assert module.cell_means(ROWS, module.parse_cell("trace"), "edf")["completion_rate"] == pytest.approx(0.2)


def test_cells_parse_and_bad_ones_are_refused():
    module = load_script("benchmarks/cell_diagnostics.py")
    assert module.parse_cell("rl/heavy") == ("rl", "heavy", None)
    assert module.parse_cell("tabular/train@32") == ("tabular", "train", 32)
    for bad in ("rl", "rl/", "rl/heavy@x", "/heavy"):
        with pytest.raises(ValueError, match="WORKLOAD/LOAD"):
            module.parse_cell(bad)


def test_reads_gzipped_rows_and_refuses_other_json(tmp_path):
    module = load_script("benchmarks/cell_diagnostics.py")
    good = tmp_path / "rows.json.gz"
    with gzip.open(good, "wt") as handle:
        json.dump(ROWS, handle)
    assert module.load_rows(good) == ROWS
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"not": "rows"}))
    with pytest.raises(ValueError, match="not the per-seed rows"):
        module.load_rows(other)


def test_command_line_refuses_a_bad_cell(tmp_path):
    rows = tmp_path / "rows.json"
    rows.write_text(json.dumps(ROWS))
    script = str(ROOT / "benchmarks" / "cell_diagnostics.py")
    done = run_script([sys.executable, script, str(rows), "--cells", "rl-heavy"])
    assert done.returncode == 2 and "expected WORKLOAD/LOAD" in done.stderr
    done = run_script([sys.executable, script, str(rows), "--cells", "rl/heavy@8", "--agents", "edf"])
    assert done.returncode == 0 and "| rl/heavy@8 | edf | 2 | 0.500 | 0.300 |" in done.stdout
