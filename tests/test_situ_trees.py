"""benchmarks/situ_trees.py: the trees' refinement by hand on stand-in models, what a fit learns, the
recording grid's seeds, refusals."""

import sys

import numpy as np
import pytest

from mara_env.forecast.base import MAX_REMAINING
from mara_env.forecast.flow import FlowForecaster
from tests.scripts import ROOT, load_script, run_script


class _Constant:
    """A stand-in tree model: the same log offset for every task."""

    def __init__(self, offset):
        self.offset = offset

    def predict(self, x):
        return np.full(len(x), self.offset)


def _histories():
    work = np.arange(1.0, 9.0)
    return [(work, 2.0 * work**-0.5), (np.array([1.0]), np.array([2.0]))]  # the second cannot be refined


def test_refinement_by_hand_on_stand_in_models():
    module = load_script("benchmarks/situ_trees.py")
    module.FITTED["trees"] = [_Constant(-1.0), _Constant(0.0), _Constant(1.0)]
    histories, targets = _histories(), [0.5, 0.5]
    flow = FlowForecaster().predict(histories, targets)
    refined = module.TreeSitu("trees").predict(histories, targets)
    median = flow.remaining[0, 1]
    assert 0 < median < MAX_REMAINING
    # offsets -1, 0, +1 around the flow's median: p10 = m / e, p50 = m, p90 = m * e
    np.testing.assert_allclose(refined.remaining[0], [median / np.e, median, median * np.e], rtol=1e-9)
    np.testing.assert_array_equal(refined.remaining[1], flow.remaining[1])  # one point: the flow's answer


def test_refined_quantiles_are_capped_and_ordered():
    module = load_script("benchmarks/situ_trees.py")
    module.FITTED["trees_scale"] = [_Constant(30.0), _Constant(-2.0), _Constant(0.0)]  # crossing, and huge
    refined = module.TreeSitu("trees_scale").predict(_histories(), [0.5, 0.5])
    row = refined.remaining[0]
    assert np.all(np.diff(row) >= 0) and row[2] == MAX_REMAINING


def test_a_fit_learns_a_constant_offset_and_scale_adds_the_median():
    pytest.importorskip("sklearn")
    module = load_script("benchmarks/situ_trees.py")
    rng = np.random.default_rng(0)
    cases = {"features": rng.normal(size=(400, 10)), "log_median": rng.normal(size=400)}
    cases["log_truth"] = cases["log_median"] + 0.5
    models = module.fit_trees(cases, scale=True, seed=0)
    x = module.inputs(cases["features"], cases["log_median"], scale=True)
    assert x.shape == (400, 11) and module.inputs(cases["features"], cases["log_median"], False).shape == (400, 10)
    np.testing.assert_allclose([m.predict(x[:5]) for m in models], 0.5, atol=1e-6)


def test_recording_grid_plays_training_curves_on_its_own_seeds():
    module = load_script("benchmarks/situ_trees.py")
    grid = module.recording_grid([8, 32], 300)
    assert len(grid) == 6 * 2 * 2 * 2 and {g["curve_split"] for g in grid} == {"train"}
    seeds = [g["seed"] for g in grid]
    assert len(set(seeds)) == len(seeds) and min(seeds) == module.SEED_BASE > module.VALIDATION_SEED


def test_bad_cells_are_refused():
    result = run_script(
        [sys.executable, str(ROOT / "benchmarks/situ_trees.py"), "--out", "x", "--cells", "rl:train"],
        cwd=ROOT,
    )  # fmt: skip
    assert result.returncode == 2 and "WORKLOAD:LOAD:NODES" in result.stderr
