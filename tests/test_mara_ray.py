"""MARA rollouts on Ray actors give the same turns as local worker processes for the same seeds."""

from __future__ import annotations

import numpy as np
import pytest

from mara_agents.mara.workers import RayWorkerPool, WorkerPool

pytest.importorskip("ray")

ENV = {"num_nodes": 2, "max_tasks": 4, "horizon": 30, "forecaster": "none", "shaping": True}


def _play(pool, turns: int) -> list[tuple]:
    """Observe, then step every copy with its first allowed non-idle action (idle if none)."""
    seen = [pool.observe()]
    try:
        for _ in range(turns):
            actions = np.array([int(np.flatnonzero(t[1])[-1]) for t in seen[-1]])
            seen.append(pool.step(actions))
    finally:
        pool.close()
    return seen


def test_ray_rollouts_equal_local_rollouts():
    local = _play(WorkerPool(4, ENV, seed=3, processes=2, teacher="srw"), turns=70)
    remote = _play(RayWorkerPool(4, ENV, seed=3, processes=2, teacher="srw", address="local"), turns=70)
    assert len(local) == len(remote)
    for a, b in zip(local, remote):
        for turn_a, turn_b in zip(a, b):
            for x, y in zip(turn_a[:3], turn_b[:3]):  # observation, mask, state
                np.testing.assert_array_equal(x, y)
            assert turn_a[3:] == turn_b[3:]  # teacher label and path, reward, done, finished episode's rate
    assert any(t.done for step in local for t in step)  # an episode ended and a copy was reset on both
