"""DAgger on the actions: the student plays, the teacher labels its turns, the network is refitted."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest
import torch

from mara_agents.evaluation import play_episode
from mara_agents.mara.action_dagger import ACTION_SEED_BASE, action_rounds, action_sampler, action_seeds
from mara_agents.mara.checkpoint import load_checkpoint, save_checkpoint
from mara_agents.mara.gate_dagger import GATE_SEED_BASE
from mara_agents.mara.imitation import collect_demonstrations, play_teacher_episode
from mara_agents.mara.scenarios import ScenarioFocus
from mara_agents.mara.scheduler import MARAScheduler
from mara_agents.mara.slot_network import SlotMARANet
from mara_agents.mara.teacher import Teacher
from mara_env.env import live_turns, raw_env
from tests.scripts import run_script
from tests.test_mara_policy import _train_mara_config

SMALL_ENV = {"num_nodes": 4, "max_tasks": 8, "horizon": 40, "workload": "synthetic", "load": "heavy",
             "forecaster": "wls"}  # fmt: skip


def _checkpoint(tmp_path) -> str:
    torch.manual_seed(0)
    return save_checkpoint(SlotMARANet(width=16, layers=1, heads=2), tmp_path / "net.pt", SMALL_ENV)


def _student_play_labelled_by_hand(checkpoint, teacher: str, seed: int) -> tuple[list[int], list[int]]:
    """The student's episode played step by step: its actions, and the teacher's at each of its states."""
    net, trained_env, _ = load_checkpoint(checkpoint)
    student = MARAScheduler(net, trained_env=trained_env)
    env = raw_env(**SMALL_ENV)
    guide = Teacher.for_env(teacher, SMALL_ENV)
    env.reset(seed=seed)
    guide.reset(seed)
    student.reset(seed)
    played, labels = [], []
    for agent in live_turns(env):
        observation = env.observe(agent)
        labels.append(guide.action(env, observation))
        played.append(student.act(observation, agent))
        env.step(played[-1])
    return played, labels


def test_the_student_plays_and_the_teacher_only_labels(tmp_path):
    checkpoint = _checkpoint(tmp_path)
    _obs, masks, _states, actions, returns, rate, _paths = play_teacher_episode(SMALL_ENV, "srw", 3, student=checkpoint)
    played, labels = _student_play_labelled_by_hand(checkpoint, "srw", 3)
    np.testing.assert_array_equal(actions, labels)  # the labels are srw's, at the student's states
    assert not np.array_equal(actions, played)  # an untrained student departs from srw
    assert masks[np.arange(len(actions)), actions].all()  # every label is an allowed action
    net, trained_env, _ = load_checkpoint(checkpoint)
    alone = play_episode(raw_env(**SMALL_ENV), MARAScheduler(net, trained_env=trained_env), 3)
    assert rate == pytest.approx(alone["completion_rate"])  # labelling does not change the student's play
    assert returns[0] == pytest.approx(alone["return"])  # the return to come at the first turn: the whole episode's
    teacher_play = play_teacher_episode(SMALL_ENV, "srw", 3)[3]
    assert not np.array_equal(teacher_play, played)  # without a student, srw plays


def test_rounds_refit_toward_the_labels_reproducibly(tmp_path):
    checkpoint = _checkpoint(tmp_path)
    reports, weights = [], []
    for name in ("a", "b"):
        net = load_checkpoint(checkpoint)[0]
        reports.append(action_rounds(net, checkpoint, "srw", None, tmp_path / f"{name}.pt", (4, 8), rounds=2,
                                     episodes=2, epochs=3, learning_rate=3e-3, jobs=1, progress=False))  # fmt: skip
        weights.append(load_checkpoint(tmp_path / f"{name}.pt")[0].state_dict())
        assert all(torch.equal(value, net.state_dict()[key]) for key, value in weights[-1].items())
    assert reports[0] == [{**one, "seconds": reports[0][i]["seconds"]} for i, one in enumerate(reports[1])]
    assert all(torch.equal(value, weights[1][key]) for key, value in weights[0].items())
    first, second = reports[0]
    assert first["turns"] > 0 and second["turns"] > 0
    assert second["bc_accuracy"] > 0.8  # the refitted student agrees with srw on its own states
    assert load_checkpoint(tmp_path / "a.pt")[2]["action_dagger_rounds"] == 2


def test_an_anchor_joins_every_refit_and_is_not_counted_as_own_play(tmp_path, monkeypatch):
    import mara_agents.mara.action_dagger as action_dagger

    checkpoint = _checkpoint(tmp_path)
    anchor = collect_demonstrations(SMALL_ENV, "lara", [5, 6], processes=1, progress=False)  # the teacher's own
    fitted, real_clone = [], action_dagger.clone
    monkeypatch.setattr(action_dagger, "clone", lambda net, demos, *a, **k: fitted.append(len(demos)) or real_clone(
        net, demos, *a, **k))  # fmt: skip
    net = load_checkpoint(checkpoint)[0]
    report = action_rounds(net, checkpoint, "srw", None, tmp_path / "a.pt", (4, 8), rounds=2, episodes=1,
                           epochs=1, jobs=1, progress=False, anchor=anchor)  # fmt: skip
    own = [one["turns"] for one in report]
    assert fitted == [len(anchor) + own[0], len(anchor) + own[0] + own[1]]  # the anchor in both refits, once


def test_round_seeds_are_disjoint_from_every_other_use():
    seeds = action_seeds(0, 100) + action_seeds(1, 100)
    assert len(set(seeds)) == 200 and min(seeds) == ACTION_SEED_BASE
    assert min(seeds) > GATE_SEED_BASE + 10_000_000 and max(seeds) < 2**31 - 1  # above gate labels, a valid seed
    with pytest.raises(ValueError, match="rounds, episodes and epochs must be >= 1"):
        action_rounds(None, "unused.pt", "srw", None, "unused.pt", (4, 8), rounds=0)


def test_tune_actions_refuses_to_write_beside_its_checkpoint_and_reports(tmp_path):
    checkpoint = _checkpoint(tmp_path)
    script = [sys.executable, "examples/tune_actions.py", "--checkpoint", str(checkpoint)]
    done = run_script([*script, "--out", str(tmp_path)])
    assert done.returncode == 2 and "--out must not be the checkpoint's directory" in done.stderr
    done = run_script([*script, "--out", str(tmp_path), "--episodes", "0"])
    assert done.returncode == 2 and "--episodes must be >= 1, got 0" in done.stderr
    done = run_script([*script, "--out", str(tmp_path / "o"), "--anchor-episodes", "-1"])
    assert done.returncode == 2 and "--anchor-episodes must be >= 0, got -1" in done.stderr


def test_train_mara_action_flags_set_the_rounds_and_refuse_what_cannot_run(monkeypatch):
    config = _train_mara_config(monkeypatch, "--generalist", "--action-rounds", "2", "--action-episodes", "30",
                                "--action-focus", "tabular", "24", "0.7", "3.5", "0.25")  # fmt: skip
    assert (config.action_rounds, config.action_episodes, config.action_epochs) == (2, 30, 2)
    assert config.action_focus == ScenarioFocus("tabular", 24, (0.7, 3.5), 0.25)
    played = action_sampler(config.scenarios, config.action_focus)
    assert played.foci == (*config.scenarios.foci, config.action_focus)  # the warm start's own foci unchanged
    assert _train_mara_config(monkeypatch, "--generalist").action_rounds == 0  # off by default
    with pytest.raises(SystemExit, match="--action-focus .* needs --generalist"):
        _train_mara_config(monkeypatch, "--action-focus", "tabular", "24", "0.7", "3.5", "0.25")
    with pytest.raises(SystemExit, match=r"action focus .*shares add up to more than 1"):
        _train_mara_config(monkeypatch, "--generalist", "--action-focus", "tabular", "24", "0.7", "3.5", "0.9")
    with pytest.raises(SystemExit, match=r"action_episodes and action_epochs >= 1: 1, 0, 2"):
        _train_mara_config(monkeypatch, "--generalist", "--action-rounds", "1", "--action-episodes", "0")


def test_tune_actions_refits_a_copy_with_the_load_signal_grafted(tmp_path):
    checkpoint = _checkpoint(tmp_path)
    script = [sys.executable, "examples/tune_actions.py", "--checkpoint", str(checkpoint), "--graft-load-signal",
              "--episodes", "1", "--epochs", "1", "--jobs", "1", "--train-args", "--teacher srw"]  # fmt: skip
    done = run_script([*script, "--out", str(tmp_path / "o")])
    assert done.returncode == 0, done.stderr[-2000:]
    grafted, refit = (load_checkpoint(tmp_path / "o" / name)[0] for name in ("grafted.pt", "checkpoint.pt"))
    assert grafted.config["load_signal"] and refit.config["load_signal"]
    assert not torch.equal(grafted.encoder.embed[0].weight, refit.encoder.embed[0].weight)  # refitted
    refitted = ["--checkpoint", str(tmp_path / "o" / "checkpoint.pt"), "--out", str(tmp_path / "p")]
    again = run_script([*script, *refitted])
    assert again.returncode == 1 and "--graft-load-signal:" in again.stderr and "without it" in again.stderr


def test_tune_actions_anchors_its_refit_on_a_runs_warm_start_episodes(tmp_path, monkeypatch):
    # the checkpoint plays the env of the quick run whose warm-start episodes anchor it, so the turns join
    env = _train_mara_config(monkeypatch, "--teacher", "srw", "--quick").env
    torch.manual_seed(0)
    checkpoint = save_checkpoint(SlotMARANet(width=16, layers=1, heads=2), tmp_path / "net.pt", env)
    run = ["--train-args", "--teacher srw --quick", "--anchor-args", "--teacher srw --quick", "--anchor-episodes", "1"]
    script = [sys.executable, "examples/tune_actions.py", "--checkpoint", str(checkpoint), "--episodes", "1",
              "--epochs", "1", "--jobs", "1", *run, "--out", str(tmp_path / "o")]  # fmt: skip
    done = run_script(script)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads((tmp_path / "o" / "report.json").read_text())
    assert (report["anchor_episodes"], report["anchor_args"]) == (1, "--teacher srw --quick")
    assert report["rounds"][0]["turns"] > 0  # own play only: the anchor's turns are not counted here


def test_tune_actions_refuses_an_anchor_of_other_sizes_before_any_play(tmp_path, monkeypatch):
    env = {**_train_mara_config(monkeypatch, "--teacher", "srw", "--quick").env, "num_nodes": 6}  # the run's has 4
    checkpoint = save_checkpoint(SlotMARANet(width=16, layers=1, heads=2), tmp_path / "net.pt", env)
    run = ["--train-args", "--teacher srw --quick", "--anchor-args", "--teacher srw --quick", "--anchor-episodes", "1"]
    script = [sys.executable, "examples/tune_actions.py", "--checkpoint", str(checkpoint), *run,
              "--out", str(tmp_path / "o")]  # fmt: skip
    done = run_script(script)
    assert done.returncode == 1
    assert "stores episodes at 16 rows and 4 nodes, the own play at 16 and 6" in done.stderr
    assert not (tmp_path / "o").exists()  # refused before writing anything
