"""``edf_uniform``: edf's order while the tasks in the system are at most ``crowd`` x the table's rows,
uniform's beyond; and the gate label a MARA teacher takes from it, turn by turn."""

from __future__ import annotations

import numpy as np
import pytest

import mara_agents
from mara_agents.heuristics import EDFScheduler, EDFUniformScheduler, UniformScheduler
from mara_agents.mara.gate_paths import GATE_PATHS
from mara_agents.mara.imitation import play_teacher_episode
from mara_env.env import live_turns, raw_env
from tests.scripts import run_script

ENV = {"num_nodes": 4, "max_tasks": 8, "horizon": 150, "workload": "rl", "load": "extreme", "curve_split": "train"}


def _crowded_by_sim(env: raw_env, crowd: float) -> bool:
    """From the simulator, not the observation: tasks in the table (deadline not passed) and queued."""
    sim = env.sim
    tasks = sum(t is not None and t.spec.deadline >= sim.slot for t in sim.rows) + len(sim.queue)
    return tasks > crowd * env.sim.config.max_tasks


@pytest.mark.parametrize("crowd", [0.5, 1.0])
def test_it_plays_edf_until_the_cluster_is_crowded_and_uniform_after(crowd):
    env = raw_env(**ENV)
    env.reset(seed=3)
    switched, edf, uniform = EDFUniformScheduler(crowd=crowd), EDFScheduler(), UniformScheduler()
    seen = set()
    for agent in live_turns(env):
        observation = env.observe(agent)
        action = switched.act(observation, agent)
        crowded = _crowded_by_sim(env, crowd)
        rule = uniform if crowded else edf
        assert action == rule.act(observation, agent)
        if observation["action_mask"][1:].any():
            assert switched.last_path == ("uniform" if crowded else "edf")
            seen.add(crowded)
        env.step(action)
    assert seen == {False, True}  # the episode starts empty and ends crowded at the extreme load


def test_crowd_must_be_a_positive_finite_number():
    for bad in (0, -1.0, float("nan"), float("inf"), "2", True):
        with pytest.raises(ValueError, match="crowd must be"):
            EDFUniformScheduler(crowd=bad)
    assert isinstance(mara_agents.make("edf_uniform"), EDFUniformScheduler)


def test_a_teacher_labels_the_gate_with_the_rule_of_each_turn():
    teacher = "best_shared+edf_uniform~rl,1,0.1"  # edf_uniform alone on every rl episode
    env = {**ENV, "forecaster": "wls"}
    obs, masks, _, actions, _, _, paths = play_teacher_episode(env, teacher, 3)
    assert len(paths) == len(actions)
    assert set(paths) == {GATE_PATHS.index("edf"), GATE_PATHS.index("uniform")}
    # the label switches with the state: edf's on the episode's first turns (an empty cluster)
    assert paths[0] == GATE_PATHS.index("edf")
    first_uniform = int(np.argmax(paths == GATE_PATHS.index("uniform")))
    assert first_uniform > 0 and masks[first_uniform][1:].any()


def test_the_crowd_threshold_benchmark_writes_every_episode_and_refuses_bad_crowds(tmp_path):
    import json
    import sys

    script = ["benchmarks/crowd_threshold.py", "--workloads", "rl", "--sizes", "4", "--loads", "heavy"]
    small = [*script, "--seeds", "2", "--horizon", "30", "--jobs", "1", "--crowds", "0.5", "1"]
    done = run_script([sys.executable, *small, "--out", str(tmp_path / "c")])
    assert done.returncode == 0, done.stderr
    records = json.loads((tmp_path / "c.json").read_text())
    assert len(records) == 5 * 2  # edf, uniform, srw and two crowds, two seeds each
    assert "| rl | heavy | 4 |" in (tmp_path / "c.md").read_text()
    refused = run_script([sys.executable, *script, "--crowds", "0"])
    assert refused.returncode == 2 and "--crowds must be finite shares" in refused.stderr
