"""PettingZoo's own conformance tests over sizes, registration, and PettingZoo without a registry."""

import subprocess
import sys
from functools import partial
from types import SimpleNamespace

import pettingzoo
import pytest
from gymnasium.utils.env_checker import data_equivalence
from pettingzoo.test import api_test, max_cycles_test, parallel_api_test, seed_test

import mara_env

SIZES = [(1, 1), (1, 32), (4, 2), (4, 32), (16, 4), (16, 64)]


def make_aec(**kw):
    return pettingzoo.make("aec", mara_env.ENV_ID, **kw)


def make_parallel(**kw):
    return pettingzoo.make("parallel", mara_env.ENV_ID, **kw)


@pytest.mark.parametrize("num_nodes, max_tasks", SIZES)
def test_api(num_nodes, max_tasks):
    api_test(make_aec(num_nodes=num_nodes, max_tasks=max_tasks, horizon=80), num_cycles=300)


@pytest.mark.parametrize("num_nodes, max_tasks", SIZES)
def test_parallel_api(num_nodes, max_tasks):
    parallel_api_test(make_parallel(num_nodes=num_nodes, max_tasks=max_tasks, horizon=80), num_cycles=300)


@pytest.mark.parametrize("num_nodes, max_tasks", SIZES)
def test_seed(num_nodes, max_tasks):
    seed_test(partial(make_aec, num_nodes=num_nodes, max_tasks=max_tasks, horizon=80), num_cycles=300)


@pytest.mark.parametrize("num_nodes, max_tasks", SIZES)
def test_max_cycles(num_nodes, max_tasks):
    # max_cycles_test samples actions without the mask, so masked actions are played as idle here.
    kw = {"num_nodes": num_nodes, "max_tasks": max_tasks, "invalid_action": "idle"}
    module = SimpleNamespace(env=partial(make_aec, **kw), parallel_env=partial(make_parallel, **kw))
    max_cycles_test(module)


def test_registered_in_both_registries():
    assert mara_env.ENV_ID in pettingzoo.aec_registry
    assert mara_env.ENV_ID in pettingzoo.parallel_registry


def test_module_level_constructors_are_petting_zoo_envs():
    assert isinstance(mara_env.env(), pettingzoo.AECEnv)
    assert isinstance(mara_env.raw_env(), pettingzoo.AECEnv)
    assert isinstance(mara_env.parallel_env(), pettingzoo.ParallelEnv)
    assert mara_env.raw_env.metadata["is_parallelizable"] is True


def test_imports_and_runs_with_a_pettingzoo_that_has_no_registry():
    # PettingZoo 1.24-1.26 have no register/make/registries: simulate one in a fresh interpreter.
    script = (
        "import pettingzoo\n"
        "for name in ('register', 'make', 'aec_registry', 'parallel_registry'):\n"
        "    delattr(pettingzoo, name)\n"
        "import mara_env\n"
        "from mara_env.registration import register_pettingzoo\n"
        "from pettingzoo.test import api_test, parallel_api_test\n"
        "assert register_pettingzoo() is False\n"
        "api_test(mara_env.env(num_nodes=2, horizon=20, forecaster='none'), num_cycles=50)\n"
        "parallel_api_test(mara_env.parallel_env(num_nodes=2, horizon=20, forecaster='none'), num_cycles=50)\n"
        "print('ok')\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-2000:]


def test_parallel_env_is_deterministic_over_a_whole_episode():
    # PettingZoo 1.27's parallel_seed_test stops after one step (it tests `any(terminations)` on the
    # dict's keys), so the whole episode is compared here, with seeded unmasked samples as it uses.
    envs = [make_parallel(num_nodes=4, horizon=60) for _ in range(2)]
    for env in envs:
        env.reset(seed=42)
        for i, agent in enumerate(env.possible_agents):
            env.action_space(agent).seed(i)
    steps = 0
    while envs[0].agents:
        actions = [{a: env.action_space(a).sample() for a in env.agents} for env in envs]
        assert data_equivalence(actions[0], actions[1])
        out = [env.step(act) for env, act in zip(envs, actions)]
        assert data_equivalence(out[0], out[1]), f"diverged at step {steps}"
        steps += 1
    assert steps == 60 and not envs[1].agents
