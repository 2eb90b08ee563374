"""benchmarks/time_window.py: the training window's first time by hand, a clamp that touches time alone."""

import sys
from pathlib import Path

import numpy as np
import pytest

import mara_env
from mara_agents.mara.scheduler import GENERALIST_CHECKPOINT, MARAScheduler
from mara_env.observation import layout_of
from tests.scripts import load_script, run_script

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "time_window.py"


def test_the_window_starts_where_the_warmup_ends_by_hand():
    floor = load_script("benchmarks/time_window.py").window_floor
    sampler = {"warmup": True, "turns_per_episode": 2400, "horizon": (60, 300)}
    assert floor(sampler, 8) == 0.0  # 300 learned slots: whole episodes
    assert floor(sampler, 32) == pytest.approx(1 - 75 / 300)
    assert floor(sampler, 64) == pytest.approx(1 - 37 / 300)  # 2400 // 64 = 37
    assert floor({**sampler, "warmup": False}, 64) == 0.0


class Recorder:
    """A scheduler that keeps the observations it is given and idles."""

    requirements = MARAScheduler(GENERALIST_CHECKPOINT).requirements

    def __init__(self):
        self.seen = []

    def reset(self, seed=None):
        pass

    def act(self, observation, agent):
        self.seen.append(np.array(observation["observation"]))
        return 0


def test_the_clamp_raises_time_to_the_floor_and_changes_nothing_else():
    module = load_script("benchmarks/time_window.py")
    env = mara_env.raw_env(num_nodes=2, max_tasks=8, horizon=10, forecaster="flow_fixed")
    env.reset(seed=0)
    observation = env.observe(env.agent_selection)
    recorder = Recorder()
    module.TimeFloor(recorder, 0.75).act(observation, env.agent_selection)
    layout = layout_of(observation["observation"])
    index = layout.slices["global"].start + layout.global_index["time"]
    original, seen = observation["observation"], recorder.seen[0]
    assert original[index] == 0.0 and seen[index] == pytest.approx(0.75)
    assert np.array_equal(np.delete(seen, index), np.delete(original, index))
    module.TimeFloor(recorder, 0.0).act(observation, env.agent_selection)
    assert np.array_equal(recorder.seen[1], original)  # a floor of 0 changes nothing


@pytest.mark.parametrize(
    "argv, message",
    [
        (["no/such.pt"], "no such file"),
        ([str(ROOT / "mara_agents" / "mara" / "weights" / "mara.pt")], "was not trained on scenarios"),
        ([str(GENERALIST_CHECKPOINT), "--seeds", "0"], "--seeds and --jobs must be >= 1"),
    ],
)
def test_bad_arguments_are_refused_with_what_is_allowed(argv, message):
    done = run_script([sys.executable, str(SCRIPT), *argv])
    assert done.returncode == 2 and message in done.stderr, done.stderr[-1000:]
