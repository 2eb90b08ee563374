"""The MARA policy's pieces: network shapes and masks, GAE by hand, checkpoints, the smoke run."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import mara_agents
import mara_env
from mara_agents.mara.checkpoint import load_checkpoint, save_checkpoint
from mara_agents.mara.network import MARANet
from mara_agents.mara.ppo import gae
from mara_agents.mara.scheduler import MARAScheduler

ROOT = Path(__file__).resolve().parents[1]


def observation(num_nodes=4, max_tasks=8):
    env = mara_env.raw_env(num_nodes=num_nodes, max_tasks=max_tasks, forecaster="none", horizon=60)
    env.reset(seed=0)
    for _ in range(12 * num_nodes):
        obs = env.observe(env.agent_selection)
        env.step(int(np.flatnonzero(obs["action_mask"])[-1]))
    return env, env.observe(env.agent_selection)


@pytest.mark.parametrize("num_nodes, max_tasks", [(1, 4), (4, 8), (8, 32)])
def test_logits_cover_idle_and_rows_and_respect_masks(num_nodes, max_tasks):
    env, obs = observation(num_nodes, max_tasks)
    net = MARANet()
    x, m = torch.as_tensor(obs["observation"])[None], torch.as_tensor(obs["action_mask"])[None].float()
    logits = net.logits(x, m, max_tasks)
    assert logits.shape == (1, max_tasks + 1)
    assert torch.all(torch.isinf(logits[m == 0])) and torch.all(torch.isfinite(logits[m == 1]))
    assert net.value(torch.as_tensor(env.state())[None], num_nodes, max_tasks).shape == (1,)


def test_gae_hand_computed():
    # one env, three turns, episode ends after turn 1; gamma 1, lambda 0.5
    rewards = np.array([[0.0], [1.0], [2.0]])
    values = np.array([[0.5], [0.2], [1.0]])
    dones = np.array([[0.0], [1.0], [0.0]])
    adv, ret = gae(rewards, values, dones, last_value=np.array([3.0]), gamma=1.0, lam=0.5)
    # t=2: 2 + 3 - 1 = 4; t=1: 1 - 0.2 = 0.8 (no bootstrap); t=0: (0 + 0.2 - 0.5) + 0.5 * 0.8 = 0.1
    np.testing.assert_allclose(adv[:, 0], [0.1, 0.8, 4.0])
    np.testing.assert_allclose(ret, adv + values)


def test_checkpoint_round_trip_and_scheduler(tmp_path):
    net = MARANet(width=32, layers=1)
    path = save_checkpoint(net, tmp_path / "c.pt", {"forecaster": "none", "num_nodes": 4})
    loaded, env, _ = load_checkpoint(path)
    for a, b in zip(net.state_dict().values(), loaded.state_dict().values()):
        assert torch.equal(a, b)
    scheduler = MARAScheduler(path)
    assert scheduler.env_kwargs == {"history_window": 8, "forecaster": "none"}
    records = mara_agents.evaluate(scheduler, [0], num_nodes=4, horizon=60)  # masked actions would raise
    assert records[0]["arrived"] > 0


class Payload:
    """An object safe loading must refuse to unpickle."""


@pytest.mark.parametrize("damage", ["missing", "truncated", "pickled object", "mismatch"])
def test_bad_checkpoints_are_refused(tmp_path, damage):
    path = tmp_path / "c.pt"
    if damage == "truncated":
        save_checkpoint(MARANet(), path, {})
        path.write_bytes(path.read_bytes()[:300])
    elif damage == "pickled object":
        torch.save({"format": "mara-policy-v1", "x": Payload()}, path)
    elif damage == "mismatch":
        blob = {
            "format": "mara-policy-v1",
            "config": {"history_window": 8, "width": 32, "layers": 1, "heads": 4},
            "state_dict": MARANet().state_dict(),
        }
        torch.save(blob, path)
    with pytest.raises(ValueError, match="MARA checkpoint"):
        load_checkpoint(path)


def test_quick_training_run(tmp_path):
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "train_mara.py"), "--quick", "--out", str(tmp_path / "run")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert (tmp_path / "run" / "checkpoint.pt").is_file()
    log = (tmp_path / "run" / "log.csv").read_text().splitlines()
    assert len(log) >= 3 and "approx_kl" in log[0] and "explained_variance" in log[0]


def test_shipped_preliminary_checkpoint_loads_and_plays():
    path = ROOT / "mara_agents" / "mara" / "weights" / "mara_prelim.pt"
    assert path.stat().st_size < 10 * 1024 * 1024
    scheduler = MARAScheduler(path)
    assert scheduler.env_kwargs == {"history_window": 8, "forecaster": "flow"}
    record = mara_agents.evaluate(scheduler, [0], num_nodes=8, horizon=60)[0]
    assert record["completed"] + record["expired"] == record["arrived"] > 0
