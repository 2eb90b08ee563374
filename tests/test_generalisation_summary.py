"""benchmarks/generalisation.py: the summary line of the report, by hand."""

from tests.scripts import load_script


def _module():
    return load_script("benchmarks/generalisation.py")  # it imports its sibling agents_by_preset


def test_counts_cells_below_and_above_and_means_by_size():
    keys = [("rl", "train", 4), ("rl", "heavy", 4), ("rl", "train", 32), ("trace", "-", 32), ("tabular", "train", 32)]
    diffs = [
        {"mean": 0.02, "ci95": 0.01},  # above
        {"mean": -0.03, "ci95": 0.01},  # below
        {"mean": 0.01, "ci95": 0.02},  # neither
        {"mean": 0.04, "ci95": float("nan")},  # one seed: counts in the means, not in the tests
        None,  # MARA did not play this cell
    ]
    text = _module().summarise_differences(keys, diffs)
    assert "over the 4 cells: +1.0 pp" in text  # (2 - 3 + 1 + 4) / 4
    assert "significantly below: 1; significantly above: 1." in text
    assert "By cluster size (pp): M4 -0.5, M32 +2.5." in text  # (2 - 3) / 2 and (1 + 4) / 2


def test_one_size_has_no_breakdown_and_no_cell_says_so():
    module = _module()
    text = module.summarise_differences([("rl", "train", 8)], [{"mean": -0.01, "ci95": 0.005}])
    assert text == (
        "Mean of the paired differences over the 1 cells: -1.0 pp; "
        "cells where MARA is significantly below: 1; significantly above: 0."
    )
    assert module.summarise_differences([("rl", "train", 8)], [None]) == "No cell has MARA's paired difference."


def test_records_are_labelled_with_their_cell():
    results = {
        ("edf", "rl", "heavy", 4): [{"seed": 0, "workload": "rl", "load": "heavy"}],
        ("edf", "trace", "-", 32): [{"seed": 0, "workload": "mixed", "load": "train"}],
    }
    labelled = _module().labelled_records(results)
    grid = {"seed": 0, "workload": "rl", "load": "heavy", "nodes": 4, "trace": False}
    assert labelled[("edf", "rl", "heavy", 4)] == [grid]
    assert labelled[("edf", "trace", "-", 32)][0]["nodes"] == 32 and labelled[("edf", "trace", "-", 32)][0]["trace"]
    assert "nodes" not in results[("edf", "rl", "heavy", 4)][0]  # the cached records are not changed
