"""benchmarks/mara_gate.py: the gate record by hand, planners that watch without changing the episode,
refusals."""

import sys
from types import SimpleNamespace

import numpy as np
import pytest

from mara_agents.base import EnvRequirements
from mara_agents.evaluation import evaluate
from tests.scripts import ROOT, load_script, run_script

A_TASK = {"action_mask": np.array([1, 1], dtype=np.int8)}  # idle or row 0
NO_TASK = {"action_mask": np.array([1, 0], dtype=np.int8)}  # idle only


class ScriptedActor:
    """Plays a fixed list of (action, slot parts); a new parts object marks a new slot."""

    requirements = EnvRequirements()

    def __init__(self, script):
        self.script, self.slot_parts = list(script), None

    def reset(self, seed=None):
        pass

    def act(self, observation, agent):
        action, self.slot_parts = self.script.pop(0)
        return action


class Constant:
    def __init__(self, action):
        self.action = action

    def reset(self, seed=None):
        pass

    def act(self, observation, agent):
        return self.action


def _parts(srw, uniform):
    return SimpleNamespace(gate=srw, uniform_gate=uniform)


def test_gate_record_by_hand():
    module = load_script("benchmarks/mara_gate.py")
    a, b, c, empty = _parts(0.7, 0.1), _parts(0.2, 0.1), _parts(0.1, 0.6), _parts(0.9, 0.0)
    # episode 1: slot a (two turns), slot b; episode 2: slot c, an empty slot (not counted), slot a
    script = [(1, a), (1, a), (0, b), (1, c), (0, empty), (1, a)]
    observations = [A_TASK, A_TASK, A_TASK, A_TASK, NO_TASK, A_TASK]
    recorder = module.GateRecorder(ScriptedActor(script), {"one": Constant(1), "zero": Constant(0)})
    turn = 0
    for length in (3, 3):
        recorder.reset(0)
        for _ in range(length):
            recorder.act(observations[turn], "node_0")
            turn += 1
    summary = recorder.summary()
    assert summary["slots"] == 4
    assert summary["w srw"] == pytest.approx((0.7 + 0.2 + 0.1 + 0.7) / 4)
    assert summary["w edf"] == pytest.approx((0.2 + 0.7 + 0.3 + 0.2) / 4)
    assert summary["led srw"] == pytest.approx(0.5) and summary["led uniform"] == pytest.approx(0.25)
    # slot changes within an episode: a->b and c->a, both flips; b->c crosses episodes and does not count
    assert summary["lead flips /100 slots"] == pytest.approx(100.0)
    assert summary["agree one"] == pytest.approx(4 / 6) and summary["agree zero"] == pytest.approx(2 / 6)


def test_refuses_an_actor_without_a_gate():
    module = load_script("benchmarks/mara_gate.py")
    recorder = module.GateRecorder(ScriptedActor([(0, None)]), {})
    with pytest.raises(ValueError, match="slot-encoding"):
        recorder.act(A_TASK, "node_0")


def test_no_slot_with_a_task_gives_nan_gate_figures():
    module = load_script("benchmarks/mara_gate.py")
    recorder = module.GateRecorder(ScriptedActor([(0, _parts(0.9, 0.0))]), {"zero": Constant(0)})
    recorder.reset(0)
    recorder.act(NO_TASK, "node_0")
    summary = recorder.summary()
    assert summary["slots"] == 0 and summary["agree zero"] == 1.0
    assert np.isnan(summary["w srw"]) and np.isnan(summary["led srw"]) and np.isnan(summary["lead flips /100 slots"])


def test_watching_planners_do_not_change_the_episode():
    module = load_script("benchmarks/mara_gate.py")
    env = {"num_nodes": 4, "max_tasks": 16, "horizon": 30, "workload": "rl", "load": "heavy"}
    summary, weights = module.gate_cell(None, ("rl", "heavy", 4), seeds=1, horizon=30)
    plain = evaluate("mara_generalist", [0], **env)[0]
    assert summary["completion"] == pytest.approx(plain["completion_rate"])
    assert summary["switches/task"] == pytest.approx(plain["switches_per_task"])
    assert len(weights) == summary["slots"] > 0
    assert sum(summary[f"w {p}"] for p in module.PATHS) == pytest.approx(1.0)
    assert all(0.0 <= summary[f"agree {p}"] <= 1.0 for p in module.PATHS)


def test_a_pinned_generalist_plays_its_path_alone():
    module = load_script("benchmarks/mara_gate.py")
    summary, weights = module.gate_cell(None, ("rl", "heavy", 4), seeds=1, horizon=30, pin="edf")
    assert len(weights) > 0 and all(w == pytest.approx((0.0, 1.0, 0.0), abs=1e-9) for w in weights)
    assert summary["led edf"] == 1.0 and summary["lead flips /100 slots"] == 0.0


SCRIPT = ROOT / "benchmarks" / "mara_gate.py"
NINTH = ROOT / "mara_agents" / "mara" / "weights" / "mara_generalist_ninth.pt"


def test_the_shipped_generalist_can_be_pinned_on_its_uniform_path():
    module = load_script("benchmarks/mara_gate.py")
    summary, weights = module.gate_cell(None, ("rl", "heavy", 4), seeds=1, horizon=30, pin="uniform")
    assert len(weights) > 0 and all(w == pytest.approx((0.0, 0.0, 1.0), abs=1e-9) for w in weights)
    assert summary["lead flips /100 slots"] == 0.0


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        (["--seeds", "0"], "--seeds"),
        (["--checkpoint", "missing.pt"], "no such file"),
        # the ninth generalist has no uniform path (the shipped one has)
        (["--checkpoint", str(NINTH), "--pin", "uniform"], "--pin uniform"),
    ],
)
def test_cli_refuses_bad_arguments(arguments, named):
    done = run_script([sys.executable, str(SCRIPT), *arguments])
    assert done.returncode == 2 and named in done.stderr


def test_cli_plays_a_named_checkpoint(tmp_path):
    checkpoint = ROOT / "mara_agents" / "mara" / "weights" / "mara_generalist_fifth.pt"
    out = tmp_path / "gate"
    command = [sys.executable, str(SCRIPT), "--workloads", "rl", "--sizes", "4", "--seeds", "1", "--horizon", "20"]
    command += ["--checkpoint", str(checkpoint), "--out", str(out)]
    done = run_script(command)
    assert done.returncode == 0, done.stderr
    report = out.with_suffix(".md").read_text()
    assert checkpoint.name in report and "| rl | train | 4 |" in report
