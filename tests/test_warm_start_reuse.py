"""PPO from another run's warm start (``warm_start_from``), and the gate loss's floor (``gate_floor``)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
import torch

import mara_agents.mara.imitation as imitation
from mara_agents.mara.checkpoint import load_checkpoint
from mara_agents.mara.guidance import gate_weight
from mara_agents.mara.ppo import PPOConfig, train
from tests.test_mara_policy import _train_mara_config

ENV = {"num_nodes": 2, "max_tasks": 4, "horizon": 20, "forecaster": "wls", "curve_split": "train", "shaping": True}
TINY = PPOConfig(
    total_turns=32,
    num_envs=2,
    processes=1,
    rollout_turns=16,
    minibatches=2,
    epochs=1,
    teacher="srw",
    warm_start_episodes=1,
    warm_start_epochs=1,
    eval_seeds=0,
    width=16,
    layers=1,
    env=ENV,
)


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    """A tiny run whose warm start the others reuse."""
    out = tmp_path_factory.mktemp("source")
    train(TINY, out, progress=False)
    return out


def test_a_run_starts_from_the_sources_warm_start_without_cloning(source, tmp_path, monkeypatch):
    def no_cloning(*args, **kwargs):
        raise AssertionError("the teacher's episodes were collected again")

    monkeypatch.setattr(imitation, "collect_demonstrations", no_cloning)
    out = tmp_path / "reused"
    result = train(replace(TINY, warm_start_from=str(source), seed=1), out, progress=False)
    before = json.loads((source / "warm_start.json").read_text())
    after = json.loads((out / "warm_start.json").read_text())
    assert after == {**before, "from": str(source)} and result["warm_start"]["from"] == str(source)
    original, reused = (load_checkpoint(run / "warm_start.pt")[0].state_dict() for run in (source, out))
    assert original.keys() == reused.keys()
    assert all(torch.equal(original[key], reused[key]) for key in original)
    assert len(result["history"]) == 1  # and PPO ran from there


def test_training_leaves_the_callers_global_torch_rng_as_it_was(tmp_path):
    torch.manual_seed(1234)
    expected = torch.rand(3)
    torch.manual_seed(1234)
    train(TINY, tmp_path / "run", progress=False)
    assert torch.equal(torch.rand(3), expected)


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"width": 32}, "width"),
        ({"autoregressive": False}, "autoregressive"),
        ({"env": {**ENV, "forecaster": "none"}}, "env forecaster"),
    ],
)
def test_a_warm_start_made_with_other_settings_is_refused_before_any_work(source, tmp_path, change, named):
    config = replace(TINY, warm_start_from=str(source), **change)
    with pytest.raises(ValueError, match=f"other settings than this run's: .*{named}"):
        train(config, tmp_path / "run", progress=False)
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    ("text", "complaint"),
    [
        ("{", "must hold return_mean, return_std and turns"),
        ('{"return_mean": 1.0, "turns": 10}', "must hold return_mean, return_std and turns"),
        ('{"return_mean": 1.0, "return_std": 0.0, "turns": 10}', "return_std > 0"),
        ('{"return_mean": NaN, "return_std": 1.0, "turns": 10}', "finite returns"),
    ],
)
def test_corrupt_warm_start_statistics_are_refused(source, tmp_path, text, complaint):
    copy = tmp_path / "copy"
    copy.mkdir()
    (copy / "warm_start.pt").write_bytes((source / "warm_start.pt").read_bytes())
    (copy / "warm_start.json").write_text(text)
    with pytest.raises(ValueError, match=complaint):
        train(replace(TINY, warm_start_from=str(copy)), tmp_path / "run", progress=False)
    assert not (tmp_path / "run").exists()


def test_a_missing_warm_start_is_refused_in_the_library_and_the_cli(tmp_path, monkeypatch):
    with pytest.raises(ValueError, match="MARA checkpoint"):
        train(replace(TINY, warm_start_from=str(tmp_path / "nowhere")), tmp_path / "run", progress=False)
    with pytest.raises(SystemExit, match="--warm-start-from: .*MARA checkpoint"):
        _train_mara_config(monkeypatch, "--warm-start-from", str(tmp_path / "nowhere"))


def test_the_cli_names_what_differs_before_training(source, monkeypatch):
    argv = ["--warm-start-from", str(source), "--teacher", "srw", "--forecaster", "wls"]
    with pytest.raises(SystemExit, match="--warm-start-from: .*other settings than this run's: .*width"):
        _train_mara_config(monkeypatch, *argv)


def test_the_gate_weight_never_falls_below_its_floor():
    config = PPOConfig(gate_coef=0.4, guide_coef=0.5, gate_floor=0.1)
    assert gate_weight(config, 0.5) == pytest.approx(0.4)  # annealed as the guide is, above the floor
    assert gate_weight(config, 0.25) == pytest.approx(0.2)
    assert gate_weight(config, 0.05) == pytest.approx(0.1)  # 0.04 annealed: held at the floor
    assert gate_weight(config, 0.0) == pytest.approx(0.1)  # and on after the guide is off
    assert gate_weight(PPOConfig(gate_coef=0.0), 0.0) == 0.0


def test_a_gate_floor_outside_zero_to_the_gate_coef_is_refused(tmp_path, monkeypatch):
    hinted = {"architecture": "slot", "planner_hints": True, "pick_hints": True, "teacher": "best_shared"}
    for coef, floor in ((0.5, 0.6), (0.5, -0.1), (0.0, 0.2), (0.5, float("nan"))):
        with pytest.raises(ValueError, match=r"gate_floor must lie in \[0, gate_coef"):
            train(PPOConfig(**hinted, gate_coef=coef, gate_floor=floor), tmp_path / "run", progress=False)
    assert not (tmp_path / "run").exists()
    assert (
        _train_mara_config(monkeypatch, "--generalist", "--gate-coef", "0.5", "--gate-floor", "0.2").gate_floor == 0.2
    )
    # the generalist's default gate loss (0.5) takes a floor as well
    assert _train_mara_config(monkeypatch, "--generalist", "--gate-floor", "0.2").gate_floor == 0.2
    for argv in (
        ["--generalist", "--gate-coef", "0", "--gate-floor", "0.2"],
        ["--generalist", "--gate-coef", "0.5", "--gate-floor", "0.6"],
        ["--generalist", "--gate-floor", "0.6"],
    ):
        with pytest.raises(SystemExit, match=r"--gate-floor must lie in \[0, the gate loss's weight"):
            _train_mara_config(monkeypatch, *argv)


def test_ppo_from_one_warm_start_is_reproducible_by_seed(source, tmp_path):
    """The same warm start and PPO seed give the same weights; another seed, other weights (the seed is
    what separates PPO runs of one recipe, so a recipe is judged over several)."""
    config = replace(TINY, total_turns=64, warm_start_from=str(source))  # two PPO iterations
    runs = {name: tmp_path / name for name in ("a", "b", "seed1")}
    for name, out in runs.items():
        train(replace(config, seed=1) if name == "seed1" else config, out, progress=False)
    a, b, other = (load_checkpoint(out / "checkpoint.pt")[0].state_dict() for out in runs.values())
    assert all(torch.equal(a[key], b[key]) for key in a)
    assert not all(torch.equal(a[key], other[key]) for key in a)
