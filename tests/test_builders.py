"""The builders of the new curve banks: grids, schedules, and tiny real runs in the shipped format."""

import importlib

import numpy as np
import pytest

from mara_env.workloads import build as build_module
from mara_env.workloads.bank import read_bank
from mara_env.workloads.builders._common import SCHEDULES, lr_factor, sample_grid
from mara_env.workloads.recorded import NEW_BANKS


@pytest.mark.parametrize("name", NEW_BANKS)
def test_full_grid_is_large_distinct_and_described(name):
    builder = importlib.import_module(f"mara_env.workloads.builders.{name}")
    grid = builder.grid("full")
    assert len(grid) >= 150
    assert len({c["key"] for c in grid}) == len(grid)
    assert all({"key", "family", "seed"} <= c.keys() for c in grid)
    assert builder.LOSS.startswith(f"{name}:") and len(builder.LOSS) > 60
    with pytest.raises(ValueError, match="size must be"):
        builder.grid("huge")


@pytest.mark.parametrize("name", NEW_BANKS)
def test_tiny_build_gives_positive_evenly_spaced_curves(tmp_path, name):
    bank = read_bank(build_module.build(name, "tiny", tmp_path / f"{name}.npz", progress=False))
    assert len(bank) == 2 and bank.info["size"] == "tiny"
    for x, y in zip(bank.steps, bank.losses):
        assert np.all(y > 0) and np.all(np.isfinite(y)) and np.allclose(np.diff(x), x[1] - x[0])
    assert all(m["config"]["key"] == m["key"] for m in bank.meta)


def test_tiny_run_is_deterministic():
    from mara_env.workloads.builders import tabular

    config = tabular.grid("tiny")[0]
    np.testing.assert_array_equal(tabular.run(config)["losses"], tabular.run(config)["losses"])


def test_schedules_have_their_shapes():
    assert lr_factor("constant", 0.9) == 1.0
    assert lr_factor("step", 0.49) == 1.0 and lr_factor("step", 0.5) == pytest.approx(0.1)
    assert lr_factor("step", 0.8) == pytest.approx(0.01)
    assert lr_factor("step3", 0.9) == pytest.approx(1e-3)
    assert lr_factor("cosine", 0.0) == 1.0 and lr_factor("cosine", 0.999) < 1e-4
    assert lr_factor("warmup_cosine", 0.0) < 0.05 and lr_factor("warmup_cosine", 0.05) == pytest.approx(1.0)
    for name in SCHEDULES:
        factors = [lr_factor(name, p) for p in np.linspace(0, 0.999, 50)]
        assert all(0 < f <= 1.0 for f in factors)
    with pytest.raises(ValueError, match="schedule must be one of"):
        lr_factor("triangular", 0.5)


def test_sampled_grid_is_seeded():
    axes = {"a": (1, 2, 3), "b": (0.1, 0.2)}
    assert sample_grid("x", axes, 5, seed=1) == sample_grid("x", axes, 5, seed=1)
    with pytest.raises(RuntimeError, match="fewer than"):
        sample_grid("x", axes, 7, seed=1)
