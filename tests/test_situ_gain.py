"""benchmarks/situ_gain.py: --others against the best of the rest, and --reuse, by hand."""

import argparse
import json

import pytest

from tests.scripts import load_script


def _module():
    return load_script("benchmarks/situ_gain.py")


def test_others_are_set_against_the_best_of_the_rest_of_each_cell():
    args = argparse.Namespace(agents=["srw"], others=["new"])
    cell = ("rl", "heavy", 8)
    rates = {
        ("srw", False, *cell): [0.50, 0.60, 0.70],
        ("srw", True, *cell): [0.60, 0.70, 0.80],  # the best of the rest: mean 0.70
        ("uniform", False, *cell): [0.40, 0.40, 0.40],
        ("edf", False, *cell): [0.65, 0.65, 0.65],
        ("oracle", False, *cell): [0.99, 0.99, 0.99],  # the truth rows are never the rest
        ("new", False, *cell): [0.70, 0.80, 0.90],
    }
    text = "\n".join(_module().against_the_rest(rates, [cell], args))
    # new - srw situ = +0.10 at every seed: the interval has no width, so it is significant
    assert "| rl | heavy | 8 | srw situ 0.700 | 0.800 | +10.0 ± 0.0 pp |" in text
    assert "`new` - best of the rest averages +10.0 points over 1 cells; significantly above in 1, below in 0." in text
    assert _module().against_the_rest(rates, [cell], argparse.Namespace(agents=["srw"])) == []


def test_reuse_refuses_a_run_of_other_episodes(tmp_path):
    module = _module()
    saved = {"command": {"split": "test", "first_seed": 0, "seeds": 10, "horizon": 300}, "rows": []}
    saved["rows"].append({"agent": "srw", "situ": True, "workload": "rl", "load": "heavy", "nodes": 8, "rates": [0.5]})
    path = tmp_path / "saved.json"
    path.write_text(json.dumps(saved))
    args = argparse.Namespace(split="test", first_seed=0, seeds=10, horizon=300)
    assert module.reusable_rates(path, args) == {("srw", True, "rl", "heavy", 8): [0.5]}
    with pytest.raises(SystemExit, match="its horizon is 300, this run's 200"):
        module.reusable_rates(path, argparse.Namespace(**{**vars(args), "horizon": 200}))
    path.write_text("{not json")
    with pytest.raises(SystemExit, match="not a situ_gain.py --json file"):
        module.reusable_rates(path, args)
