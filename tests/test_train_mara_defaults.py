"""What the default ``--generalist`` run trains, and how to get an earlier recipe back with today's flags."""

from __future__ import annotations

import dataclasses

from mara_agents.mara.checkpoint import load_checkpoint
from mara_agents.mara.ppo import PPOConfig
from mara_agents.mara.scenarios import ScenarioFocus, ScenarioSampler
from mara_agents.mara.scheduler import GENERALIST_CHECKPOINT
from tests.test_mara_policy import _train_mara_config

THIRTY_SECOND_TEACHER = "best_shared+uniform+fifth_generalist@16+ninth_generalist+thirtieth_generalist"
FORTY_THIRD_FLAGS = (
    "--mixed-warmup",
    "--random-window",
    "--uniform-pick",
    "--gate-coef",
    "0.5",
    "--focus",
    "rl",
    "24",
    "0.7",
    "3.5",
    "0.3",
)
OLD_DEFAULTS_OFF = ("--no-mixed-warmup", "--no-random-window", "--no-uniform-pick", "--gate-coef", "0", "--no-focus")
FORTY_FIFTH_OFF = ("--no-size-context", "--warm-start-episodes", "60", "--warm-start-epochs", "4")
THIRTY_SECOND_CANDIDATES = ("uniform", "fifth_generalist@16", "ninth_generalist", "thirtieth_generalist")


FORTY_FIFTH_CORNERS = "edf_uniform~rl,2,0.7+edf_uniform~tabular,2-16,0.7"


def _settings(config) -> dict:
    return dataclasses.asdict(config)


def _changed(old, default) -> set[str]:
    """The names of the settings in which ``old`` differs from ``default``."""
    new = _settings(default)
    return {key for key, value in _settings(old).items() if new[key] != value}


def _teacher_also(*candidates: str) -> list[str]:
    """``--teacher-also NAME`` for each candidate, as a user types them."""
    return [arg for name in candidates for arg in ("--teacher-also", name)]


# what the forty-eighth recipe changed: the size context and a wider cloning draw; the fiftieth drew
# half as many cloning episodes again
SIZE_CONTEXT_SETTINGS = ("size_context", "warm_start_episodes", "warm_start_epochs")
FIFTIETH_FLAGS = ("--size-context", "--warm-start-episodes", "180", "--warm-start-epochs", "2")
FORTY_EIGHTH_OFF = ("--warm-start-episodes", "120")


def test_the_default_generalist_run_is_the_fiftieth_recipe(monkeypatch):
    default = _train_mara_config(monkeypatch, "--generalist")
    assert default.rule_gate  # then the sixty-seventh run's rule-gate step (the quick run has none)
    assert not _train_mara_config(monkeypatch, "--generalist", "--quick").rule_gate
    assert default.teacher == f"{THIRTY_SECOND_TEACHER}+edf_uniform+{FORTY_FIFTH_CORNERS}"
    assert default.scenarios.mixed_warmup and default.scenarios.random_window
    assert default.uniform_pick and default.gate_coef == 0.5
    assert default.scenarios.focus == ScenarioFocus("rl", 24, (0.7, 3.5), 0.3)
    assert default.size_context and (default.warm_start_episodes, default.warm_start_epochs) == (180, 2)
    # naming the defaults changes nothing: the fiftieth run's flags spelled out (the forty-third's with its
    # teacher's corners widened, the size context and a wider cloning draw) give the same settings
    also = _teacher_also(*THIRTY_SECOND_CANDIDATES, "edf_uniform", *FORTY_FIFTH_CORNERS.split("+"))
    spelled = _train_mara_config(
        monkeypatch, "--generalist", "--teacher", "best_shared", *also, *FORTY_THIRD_FLAGS, *FIFTIETH_FLAGS
    )
    assert _settings(spelled) == _settings(default)


def test_the_forty_fifth_recipe_is_the_default_without_the_size_context(monkeypatch):
    old = _train_mara_config(monkeypatch, "--generalist", *FORTY_FIFTH_OFF)
    default = _train_mara_config(monkeypatch, "--generalist")
    assert not old.size_context and (old.warm_start_episodes, old.warm_start_epochs) == (60, 4)
    assert _changed(old, default) == set(SIZE_CONTEXT_SETTINGS)


def test_the_forty_eighth_recipe_is_the_default_with_fewer_cloning_episodes(monkeypatch):
    old = _train_mara_config(monkeypatch, "--generalist", *FORTY_EIGHTH_OFF)
    default = _train_mara_config(monkeypatch, "--generalist")
    assert old.size_context and (old.warm_start_episodes, old.warm_start_epochs) == (120, 2)
    assert _changed(old, default) == {"warm_start_episodes"}


def test_the_shipped_generalist_was_trained_by_the_default_run(monkeypatch):
    """The checkpoint ``mara_generalist`` loads records the settings the default ``--generalist`` run uses,
    every one of them: it is that run's rule-gate step, from scratch (no ``--warm-start-from``)."""
    _, _, extra = load_checkpoint(GENERALIST_CHECKPOINT)
    recorded = dict(extra["config"])
    recorded["scenarios"] = ScenarioSampler.from_record(recorded["scenarios"])
    assert recorded["warm_start_from"] is None and recorded["rule_gate"]
    assert PPOConfig(**recorded) == _train_mara_config(monkeypatch, "--generalist")


def test_the_thirty_second_recipe_comes_back_with_the_new_defaults_off(monkeypatch):
    also = _teacher_also(*THIRTY_SECOND_CANDIDATES)
    off = (*OLD_DEFAULTS_OFF, *FORTY_FIFTH_OFF)
    old = _train_mara_config(monkeypatch, "--generalist", *off, "--teacher", "best_shared", *also)
    default = _train_mara_config(monkeypatch, "--generalist")
    assert old.teacher == THIRTY_SECOND_TEACHER
    assert not old.scenarios.mixed_warmup and not old.scenarios.random_window and old.scenarios.focus is None
    assert not old.uniform_pick and old.gate_coef == 0.0
    # every other setting is the default run's (table sizes, forecaster, schedule, row buckets, ...)
    assert _changed(old, default) == {"teacher", "scenarios", "uniform_pick", "gate_coef", *SIZE_CONTEXT_SETTINGS}
    newer = {"mixed_warmup": True, "random_window": True, "focus": default.scenarios.focus}
    assert dataclasses.replace(old.scenarios, **newer) == default.scenarios


def test_the_forty_third_recipe_is_the_default_with_its_narrower_corner(monkeypatch):
    also = _teacher_also(*THIRTY_SECOND_CANDIDATES, "edf_uniform", "edf_uniform~rl,24,0.7")
    old = _train_mara_config(monkeypatch, "--generalist", *FORTY_FIFTH_OFF, "--teacher", "best_shared", *also)
    default = _train_mara_config(monkeypatch, "--generalist")
    assert old.teacher == f"{THIRTY_SECOND_TEACHER}+edf_uniform+edf_uniform~rl,24,0.7"
    assert _changed(old, default) == {"teacher", *SIZE_CONTEXT_SETTINGS}
