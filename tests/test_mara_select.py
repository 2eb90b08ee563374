"""benchmarks/mara_select.py: the gaps to the best reference, by hand."""

import re

import pytest

from tests.scripts import load_script


def _module():
    return load_script("benchmarks/mara_select.py")


def test_gaps_are_to_the_best_reference_of_each_scenario():
    means = {
        "a.pt": {"small": 0.80, "big": 0.50},
        "b.pt": {"small": 0.70, "big": 0.62},
        "srw": {"small": 0.75, "big": 0.55},
        "edf": {"small": 0.72, "big": 0.60},
    }
    gaps = _module().gaps_to_references(means, ["a.pt", "b.pt"], ["srw", "edf"])
    # a.pt: small 0.80 - 0.75 (srw), big 0.50 - 0.60 (edf)
    assert gaps["a.pt"]["small"] == pytest.approx(0.05) and gaps["a.pt"]["big"] == pytest.approx(-0.10)
    assert gaps["a.pt"]["mean"] == pytest.approx(-0.025) and gaps["a.pt"]["worst"] == pytest.approx(-0.10)
    # b.pt: small 0.70 - 0.75, big 0.62 - 0.60
    assert gaps["b.pt"]["mean"] == pytest.approx(-0.015) and gaps["b.pt"]["worst"] == pytest.approx(-0.05)
    assert set(gaps) == {"a.pt", "b.pt"}


def test_the_picks_name_the_best_mean_and_the_least_bad_worst_gap():
    module = _module()
    means = {"a.pt": {"s": 0.9, "t": 0.2}, "b.pt": {"s": 0.6, "t": 0.45}, "srw": {"s": 0.6, "t": 0.5}}
    gaps = module.gaps_to_references(means, ["a.pt", "b.pt"], ["srw"])
    text = module._picks(means, gaps, ["a.pt", "b.pt"])
    assert "Best mean: `a.pt`" in text  # 0.55 against 0.525
    assert "least bad worst gap: `b.pt` (-0.050)" in text  # a.pt's worst is -0.300


def test_gaps_need_a_reference():
    with pytest.raises(ValueError, match="at least one reference"):
        _module().gaps_to_references({"a.pt": {"s": 0.5}}, ["a.pt"], [])


def test_a_sampled_checkpoint_is_named_apart_and_replays_the_same(monkeypatch):
    from mara_agents.mara.scheduler import GENERALIST_CHECKPOINT

    module = _module()
    tiny = {"num_nodes": 4, "max_tasks": 8, "workload": "synthetic", "load": "heavy"}
    monkeypatch.setitem(module.SCENARIOS, "tiny", tiny)
    path = str(GENERALIST_CHECKPOINT)
    assert module._name(f"sampled:{path}") == f"{path} (sampled)" and module._name(f"mara:{path}") == path
    assert module._name("srw") == "srw"
    job = (f"sampled:{path}", "tiny", module.VALIDATION_SEED, 40)
    spec, scenario, rate = module._play(job)
    assert (spec, scenario) == (job[0], "tiny") and 0.0 <= rate <= 1.0
    assert module._play(job)[2] == rate  # the episode's seed seeds the sampling too


def test_the_paired_difference_runs_over_every_episode_of_every_scenario():
    records = {"a.pt": {"s": [0.5, 0.7], "t": [0.2, 0.4]}, "b.pt": {"s": [0.4, 0.7], "t": [0.1, 0.2]}}
    paired = _module().paired_to(records, "a.pt", "b.pt")
    # differences 0.1, 0.0, 0.1, 0.2: mean 0.1, sample sd 0.0816, t(3) 3.182 -> half-width 0.130
    assert paired["n"] == 4 and paired["mean"] == pytest.approx(0.1)
    assert paired["ci95"] == pytest.approx(3.182 * 0.08165 / 2, rel=1e-3)


@pytest.mark.parametrize(
    ("first", "seeds", "message"),
    [
        (9_999_999, 8, r"--first-seed 9,999,999: validation seeds lie in \[10,000,000, 1,000,000,000\)"),
        (999_999_995, 8, r"it must lie in \[10,000,000, 999,999,992\]"),
        (10_000_000, 0, "--seeds must be at least 1, got 0"),
    ],
)
def test_seeds_outside_the_validation_range_are_refused(first, seeds, message, monkeypatch, capsys):
    module = _module()
    argv = ["mara_select.py", "x.pt", "--first-seed", str(first), "--seeds", str(seeds)]
    monkeypatch.setattr("sys.argv", argv)
    with pytest.raises(SystemExit):
        module.main()
    assert re.search(message, capsys.readouterr().err)


def test_against_must_be_one_of_the_checkpoints(monkeypatch, capsys):
    monkeypatch.setattr("sys.argv", ["mara_select.py", "a.pt", "b.pt", "--against", "c.pt"])
    with pytest.raises(SystemExit):
        _module().main()
    assert "--against c.pt must be one of the checkpoints compared: ['a.pt', 'b.pt']" in capsys.readouterr().err


def test_validation_episodes_have_the_test_grids_length_and_table_sizes():
    # At 200 slots the 64-node tables stayed near the 64 rows the generalist trained with, and the
    # suite hid a 6-point loss to srw that the 300-slot test grid shows.
    module = _module()
    grid = load_script("benchmarks/generalisation.py")
    assert module.HORIZON == grid.HORIZON == 300
    for name, scenario in module.SCENARIOS.items():
        assert scenario["max_tasks"] == grid.table_size(scenario["num_nodes"]), name


def test_on_request_scenarios_stay_out_of_the_default_suite():
    # The default mean must stay comparable with the reports written before they were added.
    module = _module()
    assert set(module.ON_REQUEST) <= set(module.SCENARIOS)
    assert module.DEFAULT_SCENARIOS == [
        "M8 synthetic train",
        "M8 rl train",
        "M8 mixed heavy",
        "M32 synthetic train",
        "M32 mixed heavy",
        "M64 rl train",
        "M64 tabular train",
    ]
    assert "M32 tabular train" in module.ON_REQUEST and "M4 charlm train" in module.ON_REQUEST
    assert "M32 tabular extreme" in module.ON_REQUEST and "M64 tabular heavy" in module.ON_REQUEST
