"""Rollout workers do not outlive a killed trainer: each exits once its pipe's other end is gone."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

POOL = textwrap.dedent(
    """
    import time
    from mara_agents.mara.workers import WorkerPool
    pool = WorkerPool(3, {"num_nodes": 2, "max_tasks": 4, "horizon": 10, "forecaster": "none"}, seed=0, processes=3)
    pool.observe()
    print(*[p.pid for p in pool.processes], flush=True)
    time.sleep(120)
    """
)


def _running(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie, exited but not yet reaped, counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc and forks")
def test_workers_exit_when_their_trainer_is_killed():
    trainer = subprocess.Popen([sys.executable, "-c", POOL], stdout=subprocess.PIPE, text=True)
    try:
        workers = [int(pid) for pid in trainer.stdout.readline().split()]
        assert len(workers) == 3 and all(_running(pid) for pid in workers)
        os.kill(trainer.pid, signal.SIGKILL)  # no clean-up runs: the workers see only their pipes close
        trainer.wait(timeout=10)
        deadline = time.monotonic() + 20
        while any(_running(pid) for pid in workers) and time.monotonic() < deadline:
            time.sleep(0.2)
        left = [pid for pid in workers if _running(pid)]
        for pid in left:  # do not leave them behind even when the test fails
            os.kill(pid, signal.SIGKILL)
        assert not left, f"workers {left} outlived their killed trainer"
    finally:
        trainer.kill()
