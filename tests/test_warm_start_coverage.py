"""benchmarks/warm_start_coverage.py and what it rests on: a recorded sampler drawn again, the warm-start seeds."""

import dataclasses
import json

import numpy as np
import pytest

from mara_agents.mara.ppo import warm_start_seeds
from mara_agents.mara.scenarios import ScenarioFocus, ScenarioSampler
from tests.scripts import load_script

coverage = load_script("benchmarks/warm_start_coverage.py")


def test_a_recorded_sampler_draws_the_same_scenarios():
    sampler = ScenarioSampler(
        nodes=(2, 32), workloads=("rl", "tabular"), warmup=True, focus=ScenarioFocus("rl", 24, (0.7, 3.5), 0.3)
    )
    record = json.loads(json.dumps(dataclasses.asdict(sampler)))  # as a checkpoint's config holds it
    again = ScenarioSampler.from_record(record)
    assert again == sampler
    for seed in range(5):
        assert again.sample(np.random.default_rng(seed)) == sampler.sample(np.random.default_rng(seed))


def test_warm_start_seeds_by_hand():
    assert warm_start_seeds(0, 3, scenarios=True) == [1_500_000_000, 1_500_000_001, 1_500_000_002]
    assert warm_start_seeds(2, 1, scenarios=True) == [1_500_200_000]
    assert warm_start_seeds(1, 2, scenarios=False) == [20_100_000, 20_100_001]


def test_coverage_counts_episodes_by_workload_and_size_band():
    drawn = [
        {"workload": "rl", "num_nodes": 4, "load": 1.234},
        {"workload": "rl", "num_nodes": 5, "load": 2.0},
        {"workload": "rl", "num_nodes": 6, "load": 0.9},
        {"workload": "tabular", "num_nodes": 64, "load": 3.1},
    ]
    assert coverage.coverage(drawn) == {"rl": {"2-5": [1.23, 2.0], "6-16": [0.9]}, "tabular": {"33-64": [3.1]}}
    with pytest.raises(ValueError, match="nodes must be within 2-64"):
        coverage.band_of(65)


def test_a_checkpoint_without_a_sampler_is_refused(tmp_path):
    from mara_agents.mara.checkpoint import save_checkpoint
    from mara_agents.mara.network import MARANet

    extra = {"config": {"scenarios": None, "seed": 0, "warm_start_episodes": 4}}
    path = save_checkpoint(MARANet(), tmp_path / "plain.pt", {}, extra)
    with pytest.raises(SystemExit, match="no scenario sampler recorded"):
        coverage.recorded_run(path)


def test_a_file_that_is_no_checkpoint_is_refused_with_the_loaders_error(tmp_path):
    path = tmp_path / "corrupt.pt"
    path.write_bytes(b"not a checkpoint")
    with pytest.raises(SystemExit, match="corrupt.pt"):
        coverage.recorded_run(path)
