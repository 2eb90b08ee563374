"""Gymnasium views, the SB3 adapter, and the SB3/SuperSuit examples."""

import os
import subprocess
import sys
from pathlib import Path

import gymnasium
import numpy as np
import pytest
import torch
from gymnasium.utils.env_checker import check_env

import mara_agents
import mara_env
from mara_agents.base import EnvRequirements
from mara_agents.sb3 import SB3Scheduler, load_policy, save_policy
from mara_env.node_turns import NodeTurnEnv

ROOT = Path(__file__).resolve().parents[1]
SMALL = {"num_nodes": 3, "max_tasks": 4, "horizon": 40, "forecaster": "none"}


@pytest.mark.parametrize("num_nodes", [1, 4])
def test_central_view_passes_gymnasium_check_env(num_nodes):
    env = gymnasium.make(mara_env.CENTRAL_ID, num_nodes=num_nodes, horizon=30, forecaster="none")
    check_env(env.unwrapped, skip_render_check=True)
    assert env.action_space == gymnasium.spaces.MultiDiscrete([17] * num_nodes)


def test_central_view_plays_one_slot_per_step_and_idles_masked_entries():
    env = mara_env.CentralSchedulerEnv(**SMALL)
    obs, _ = env.reset(seed=0)
    masked = np.array([np.flatnonzero(m == 0)[0] if (m == 0).any() else 0 for m in obs["action_mask"]])
    _, _, _, _, info = env.step(masked)
    assert env.aec.sim.slot == 1
    assert info["invalid_actions_this_slot"] == int((masked > 0).sum())
    with pytest.raises(ValueError, match="shape"):
        env.step(np.zeros(2, dtype=int))


def test_node_turn_view_passes_check_env_and_exposes_masks():
    env = NodeTurnEnv(**SMALL)
    check_env(env, skip_render_check=True)
    env.reset(seed=0)
    assert env.action_masks().dtype == bool and env.action_masks()[0]


def tiny_model():
    from sb3_contrib import MaskablePPO

    return MaskablePPO("MlpPolicy", NodeTurnEnv(**SMALL), n_steps=64, batch_size=32, seed=0, device="cpu")


def test_sb3_scheduler_runs_in_the_runner_and_respects_masks():
    model = tiny_model()
    model.learn(total_timesteps=64)
    strict = {**SMALL, "invalid_action": "raise"}  # a masked action would raise
    records = mara_agents.evaluate(SB3Scheduler(model, trained_env=SMALL), [0, 1], **strict)
    assert all(r["completed"] + r["expired"] == r["arrived"] for r in records)
    sampled = SB3Scheduler(model, deterministic=False, trained_env=SMALL)
    sampled = mara_agents.evaluate(sampled, [0], **strict)
    assert sampled[0]["arrived"] == records[0]["arrived"]


def test_saved_policy_reloads_safely_and_acts_the_same(tmp_path):
    model = tiny_model()
    path = save_policy(model, tmp_path / "policy.pt", SMALL)
    reloaded = load_policy(path)
    assert reloaded.requirements == EnvRequirements(reads_forecasts=False, forecaster="none", settings={"max_tasks": 4})
    env = mara_env.raw_env(**SMALL)
    env.reset(seed=3)
    for _ in range(30):
        obs = env.observe(env.agent_selection)
        action = SB3Scheduler(model).act(obs, env.agent_selection)
        assert reloaded.act(obs, env.agent_selection) == action
        env.step(action)


class Payload:
    """An object safe loading must refuse to unpickle."""


@pytest.mark.parametrize("damage", ["missing", "truncated", "pickled object", "foreign"])
def test_bad_policy_files_are_refused(tmp_path, damage):
    path = tmp_path / "policy.pt"
    if damage == "truncated":
        save_policy(tiny_model(), path, SMALL)
        path.write_bytes(path.read_bytes()[:200])
    elif damage == "pickled object":
        torch.save({"format": "mara-sb3-policy-v1", "x": Payload()}, path)
    elif damage == "foreign":
        torch.save({"weights": torch.zeros(3)}, path)
    with pytest.raises(ValueError, match="policy file"):
        load_policy(path)


@pytest.mark.parametrize("script", ["sb3_maskable_ppo.py", "sb3_supersuit_ppo.py"])
def test_sb3_examples_train_a_few_hundred_steps(tmp_path, script):
    args = [sys.executable, str(ROOT / "examples" / script), "--timesteps", "300", "--seeds", "1", "--horizon", "60"]
    if script == "sb3_maskable_ppo.py":
        args += ["--out", str(tmp_path / "p.pt")]
    # One torch thread: CI runs two test workers on two cores (70 s vs about 10 s for this run under load).
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run(args, capture_output=True, text=True, timeout=300, cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "| edf |" in done.stdout
