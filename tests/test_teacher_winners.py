"""benchmarks/teacher_winners.py: its summary by hand, and its refusals."""

import math
import sys
from pathlib import Path

import pytest

from tests.scripts import load_script, run_script

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "teacher_winners.py"


def _module():
    return load_script("benchmarks/teacher_winners.py")


def test_summary_counts_wins_means_and_margins_by_hand():
    rates = [
        {"srw": 0.5, "edf": 0.7, "uniform": 0.6},  # edf by 0.1
        {"srw": 0.4, "edf": 0.4, "uniform": 0.1},  # a tie goes to srw, margin 0
        {"srw": 0.9, "edf": 0.2},  # a gated candidate is missing: srw by 0.7
    ]
    summary = _module().summarise(rates, ["srw", "edf", "uniform"])
    assert summary["episodes"] == 3
    assert summary["wins"] == {"srw": 2, "edf": 1, "uniform": 0}
    assert summary["mean"]["srw"] == pytest.approx(0.6) and summary["mean"]["uniform"] == pytest.approx(0.35)
    assert summary["margin_mean"] == pytest.approx((0.1 + 0.0 + 0.7) / 3)
    assert summary["margin_median"] == pytest.approx(0.1)
    assert math.isnan(_module().summarise([{"srw": 0.5, "edf": 0.1}], ["srw", "edf", "x"])["mean"]["x"])


def test_draws_only_clusters_big_enough_with_the_workload_asked_for():
    module = _module()
    sampler = module.ScenarioSampler(fixed={"shaping": True, "forecaster": "flow_fixed", "curve_split": "train"})
    drawn = module.draw_scenarios(sampler, "tabular", 3, 32, module.DIAGNOSTIC_SEED)
    assert len({seed for seed, _ in drawn}) == 3
    assert all(s["num_nodes"] >= 32 and s["workload"] == "tabular" for _, s in drawn)
    assert drawn == module.draw_scenarios(sampler, "tabular", 3, 32, module.DIAGNOSTIC_SEED)  # seeded
    loaded = module.draw_scenarios(sampler, "rl", 4, 24, module.DIAGNOSTIC_SEED, min_load=2.1)
    assert all(s["num_nodes"] >= 24 and s["load"] >= 2.1 for _, s in loaded)
    # the load filter keeps a subset of the scenarios the size filter alone keeps, in the same order
    sized = module.draw_scenarios(sampler, "rl", 40, 24, module.DIAGNOSTIC_SEED)
    assert loaded == [pair for pair in sized if pair[1]["load"] >= 2.1][:4]


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--min-nodes", "65"], "--min-nodes <= 64"),
        (["--teacher", "srw"], "must be a best teacher"),
        (["--max-rows", "32"], "--max-rows: nodes must be"),
        (["--replays", "17"], "--replays must be a whole number from 1 to 16"),
        (["--min-load", "3.5"], "--min-load must be below the largest load the sampler draws (3.5)"),
    ],
)
def test_bad_arguments_are_refused_with_what_is_allowed(argv, message):
    done = run_script([sys.executable, str(SCRIPT), *argv])
    assert done.returncode == 2 and message in done.stderr, done.stderr[-1000:]


def test_winner_agreement_compares_disjoint_halves_of_the_replays_by_hand():
    agreement = _module().winner_agreement
    names = ["srw", "edf", "uniform"]
    flips = [{"srw": 0.6, "edf": 0.5}, {"srw": 0.4, "edf": 0.5}, {"srw": 0.7, "edf": 0.5}, {"srw": 0.3, "edf": 0.5}]
    steady = [{"srw": 0.2, "uniform": 0.3}] * 4  # uniform every time
    # one vs one: flips names srw then edf (differ), steady agrees
    assert agreement([flips, steady], names, 1) == pytest.approx(0.5)
    # two vs two: flips' means are srw 0.5 vs edf 0.5 (tie to srw), then srw 0.5 vs edf 0.5 again: agree
    assert agreement([flips, steady], names, 2) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="at least 4 replays"):
        agreement([flips[:3]], names, 2)
