"""benchmarks/forecast_calibration.py: its cells, its report by hand, a small run end to end, refusals."""

import json
import sys

import pytest

from tests.scripts import ROOT, load_script, run_script

bench = load_script("benchmarks/forecast_calibration.py")


def test_cells_parse_and_malformed_ones_are_named():
    assert bench.parse_cells(["rl:train:32", "mixed:2.5:4"]) == [("rl", "train", 32), ("mixed", "2.5", 4)]
    for bad in ("rl:train", "rl:train:x", "rl:train:0"):
        with pytest.raises(ValueError, match="WORKLOAD:LOAD:NODES"):
            bench.parse_cells([bad])


def test_a_trace_cell_replays_the_trace_on_mixed_curves_and_others_take_their_load(tmp_path):
    trace = tmp_path / "t.csv"
    env = bench.validation_env(("trace", "-", 32), trace, 300)
    assert env["workload"] == "mixed" and env["arrivals"] == {"trace": str(trace), "slot_seconds": 600.0}
    assert env["max_tasks"] == 64 and env["curve_split"] == "val" and "load" not in env
    assert bench.validation_env(("rl", "heavy", 4), None, 50) == dict(
        num_nodes=4, max_tasks=16, horizon=50, curve_split="val", workload="rl", load="heavy"
    )


def test_report_gives_the_paired_gain_and_the_mean_shift():
    rates = {"rl:train:8": {"srw": [0.5, 0.6], "srw+cal": [0.6, 0.8], "edf_uniform": [0.7, 0.7]}}
    text = bench.report(rates, {"rl:train:8": [-0.5, -0.3]}, ["srw"], ["rl:train:8"], 3.0)
    # gains 10 and 20 points: mean 15, t(1) 95% half-width 12.706 * 5 = 63.5
    assert "| rl:train:8 | -0.40 | 0.550 | 0.700 (+15.0 ± 63.5) | 0.700 |" in text


def test_a_small_run_writes_rates_and_shifts(tmp_path):
    out = tmp_path / "fc"
    result = run_script(
        [sys.executable, str(ROOT / "benchmarks/forecast_calibration.py"), "--out", str(out), "--cells", "rl:train:2",
         "--seeds", "2", "--horizon", "40", "--agents", "srw", "--jobs", "1"],
        cwd=ROOT,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    summary = json.loads(out.with_suffix(".json").read_text())
    assert set(summary["rates"]["rl:train:2"]) == {"srw", "srw+cal", "edf_uniform"}
    assert all(len(v) == 2 for v in summary["rates"]["rl:train:2"].values())
    assert len(summary["shifts"]["rl:train:2"]) == 2
    assert "| rl:train:2 |" in out.with_suffix(".md").read_text()


def test_malformed_cells_and_a_missing_trace_exit_2(tmp_path):
    for extra in (["--cells", "rl:train"], ["--trace", str(tmp_path / "missing.csv")]):
        result = run_script(
            [sys.executable, str(ROOT / "benchmarks/forecast_calibration.py"), "--out", str(tmp_path / "x"), *extra],
            cwd=ROOT,
        )  # fmt: skip
        assert result.returncode == 2 and ("WORKLOAD:LOAD:NODES" in result.stderr or "not a file" in result.stderr)


def test_lead_is_against_the_better_of_srw_and_edf_uniform_on_the_same_env():
    rates = {"srw": [0.5, 0.5], "srw+cal": [0.8, 0.8], "edf_uniform": [0.6, 0.7], "m": [0.7, 0.7], "m+cal": [0.7, 0.9]}
    assert bench.lead(rates, "m")["mean"] == pytest.approx(0.05)  # against edf_uniform (0.65 > 0.5)
    assert bench.lead(rates, "m+cal")["mean"] == pytest.approx(0.0)  # against srw calibrated (0.8)
    lines = bench.lead_lines({"c": rates}, ["m", "m+cal"], ["c"])
    assert "- `m`: +5.0 over 1 cells; 0 below, 0 above" in lines


def test_a_policy_trained_calibrated_gets_its_own_column_and_lead():
    rates = {"rl:train:8": {"srw": [0.5, 0.6], "srw+cal": [0.6, 0.8], "edf_uniform": [0.7, 0.7], "p+cal": [0.9, 0.9]}}
    text = bench.report(rates, {"rl:train:8": [-0.5]}, ["srw"], ["rl:train:8"], 1.0, ["p"])
    assert "| edf_uniform | p (trained calibrated) |" in text and text.count("| 0.900 |") == 1
    assert "- `p+cal`: +20.0 over 1 cells" in text  # against srw calibrated: 0.9 - 0.7


def test_reuse_keeps_an_earlier_runs_episodes_and_refuses_other_seeds(tmp_path):
    earlier = tmp_path / "earlier.json"
    earlier.write_text(json.dumps({"seeds": 8, "rates": {"a": {"srw": [0.5]}}, "shifts": {"a": [0.1]}}))
    assert bench.reused(earlier, 8) == ({"a": {"srw": [0.5]}}, {"a": [0.1]})
    with pytest.raises(SystemExit, match="played 8 seeds per cell, this run 4"):
        bench.reused(earlier, 4)
