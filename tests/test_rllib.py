"""RLlib: one short PPO iteration with action masking, RLlib's env checker on the defaults, the example.

Imports ray unconditionally: the ``rllib`` extra is part of ``dev``, so a missing install fails here
instead of skipping.
"""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import ray

import mara_env
from mara_agents.rllib import POLICY_ID, RLlibScheduler, ppo_config

ROOT = Path(__file__).resolve().parents[1]
TINY = {"train_batch_size": 200, "minibatch_size": 100, "num_epochs": 1, "hidden": (32, 32)}
SMALL_ENV = {"num_nodes": 4, "horizon": 60, "forecaster": "none"}


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray.get_runtime_context().gcs_address
    ray.shutdown()


def test_one_iteration_on_the_default_env_passes_rllibs_env_checker(local_ray):
    algo = ppo_config(None, **TINY).build_algo()  # build_algo runs RLlib's env checker on raw defaults
    try:
        result = algo.train()
    finally:
        algo.stop()
    assert result["env_runners"]["num_env_steps_sampled_lifetime"] >= TINY["train_batch_size"]
    assert np.isfinite(result["learners"][POLICY_ID]["policy_loss"])


def test_masked_actions_are_never_sampled_or_played(local_ray):
    # A strict env raises on any masked action; the checker samples unmasked actions by design, so it is off.
    config = ppo_config({**SMALL_ENV, "invalid_action": "raise"}, **TINY).environment(disable_env_checking=True)
    algo = config.build_algo()
    try:
        algo.train()  # a masked sample would raise InvalidActionError in the env runner
        module = algo.get_module(POLICY_ID)
    finally:
        algo.stop()
    for deterministic in (True, False):
        scheduler = RLlibScheduler(module, trained_env=SMALL_ENV, deterministic=deterministic, seed=1)
        env = mara_env.raw_env(**SMALL_ENV, invalid_action="raise")
        env.reset(seed=0)
        choices = played = 0
        for agent in env.agent_iter():  # raises InvalidActionError on a masked action
            done = env.terminations[agent] or env.truncations[agent]
            action = None if done else scheduler.act(env.observe(agent), agent)
            choices += not done and bool(env.observe(agent)["action_mask"][1:].any())
            played += bool(action)
            env.step(action)
        assert not env.agents and choices > 0
        assert played > 0 or deterministic  # sampling picks tasks; an untrained argmax may idle


def test_example_trains_on_a_running_cluster_with_a_remote_env_runner(local_ray, tmp_path):
    args = ["--iterations", "1", "--train-batch-size", "200", "--minibatch-size", "100", "--num-epochs", "1"]
    args += ["--num-nodes", "2", "--horizon", "30", "--seeds", "1", "--address", local_ray, "--num-env-runners", "1"]
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "rllib_ppo.py"), *args],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "iteration 1: " in done.stdout and "| rllib_ppo |" in done.stdout and "| lara |" in done.stdout


def test_ray_stays_optional():
    script = "import sys, mara_agents, mara_env; print('ray' in sys.modules, 'mara_agents.rllib' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["False", "False"], done.stderr[-2000:]
