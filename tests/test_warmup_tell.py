"""benchmarks/warmup_tell.py: the planner plays the warm-up, the network the rest; its refusals."""

import sys
from pathlib import Path

import numpy as np
import pytest

from mara_agents.mara.scheduler import GENERALIST_CHECKPOINT
from tests.scripts import load_script, run_script

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "warmup_tell.py"


def test_the_planner_plays_the_warmup_and_the_network_every_later_slot():
    module = load_script("benchmarks/warmup_tell.py")
    settings = {"num_nodes": 3, "max_tasks": 8, "horizon": 40, "workload": "rl", "load": 3.5}
    settings.update(forecaster="flow_fixed", curve_split="train")
    weights, rate = module.play_after("edf", str(GENERALIST_CHECKPOINT), settings, 1, slots=20)
    # a weight triple per network slot with a task: at most the 20 slots after the warm-up, summing to 1
    assert 1 <= len(weights) <= 20 and np.allclose(np.sum(weights, axis=1), 1.0)
    assert 0.0 <= rate <= 1.0
    longer = module.play_after("edf", str(GENERALIST_CHECKPOINT), settings, 1, slots=10)[0]
    assert len(longer) > len(weights)  # the network plays every slot after the warm-up
    again = module.play_after("edf", str(GENERALIST_CHECKPOINT), settings, 1, slots=20)
    assert again == (weights, rate)  # seeded


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--checkpoint", "no/such.pt"], "no such file"),
        (["--checkpoint", str(GENERALIST_CHECKPOINT), "--episodes", "0"], "--episodes must be >= 1"),
        (["--checkpoint", str(GENERALIST_CHECKPOINT), "--loads", "3", "2"], "focus loads must be a range"),
        (["--checkpoint", str(GENERALIST_CHECKPOINT), "--min-nodes", "65"], "focus min_nodes must be within"),
    ],
)
def test_bad_arguments_are_refused_with_what_is_allowed(argv, message):
    done = run_script([sys.executable, str(SCRIPT), *argv])
    assert done.returncode == 2 and message in done.stderr, done.stderr[-1000:]
