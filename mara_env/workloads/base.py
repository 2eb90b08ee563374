"""The workload interface and the episode generator every workload shares.

A workload only draws task *bodies* (a curve, a target, a scaling exponent). Arrival times and
deadlines are the same mechanism for every workload and live here, so that a new curve bank only has
to implement :meth:`Workload.sample_tasks`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple, Protocol

import numpy as np

from mara_env.core import LossCurve, TaskSpec, parallel_efficiency


class TaskDraw(NamedTuple):
    """A task body drawn from a workload."""

    curve: LossCurve
    target: float
    scaling_exponent: float
    family: str


class Workload(Protocol):
    """Anything that draws task bodies; register it in :data:`mara_env.workloads.WORKLOADS`."""

    name: str

    def sample_tasks(self, rng: np.random.Generator, count: int) -> list[TaskDraw]: ...


@dataclass(frozen=True)
class DeadlineModel:
    """Deadline = arrival + slack x (slots the required work takes on ``typical_nodes`` nodes).

    Parameters
    ----------
    slack_range:
        Uniform range of the slack factor (> 1 leaves room for switch costs and sharing).
    typical_nodes:
        The "typical share" of the cluster a task is expected to get.
    """

    slack_range: tuple[float, float] = (1.3, 3.0)
    typical_nodes: int = 2

    def deadline(self, rng: np.random.Generator, arrival: int, draw: TaskDraw) -> int:
        need = draw.curve.work_to_reach(draw.target)
        rate = self.typical_nodes * parallel_efficiency(self.typical_nodes, draw.scaling_exponent)
        slots = math.ceil(rng.uniform(*self.slack_range) * need / rate)
        return arrival + max(slots, 1) - 1


def poisson_arrival_slots(rng: np.random.Generator, rate: float, horizon: int) -> np.ndarray:
    """Arrival slot of every task: ``Poisson(rate)`` arrivals in each slot of ``[0, horizon)``."""
    counts = rng.poisson(rate, size=horizon)
    return np.repeat(np.arange(horizon), counts)


def arrival_rate(load: float, total_speed: float, mean_required_work: float) -> float:
    """Tasks per slot such that ``rate * mean_required_work / total_speed == load``."""
    return load * total_speed / mean_required_work


def generate_episode(
    workload: Workload,
    rng: np.random.Generator,
    rate: float,
    horizon: int,
    deadlines: DeadlineModel | None = None,
) -> list[TaskSpec]:
    """Draw the tasks of one episode.

    Tasks whose deadline would fall at or past the horizon are not generated, so that every task of
    an episode is decided (completed or expired) within it; the offered load therefore tapers over
    the last slots of a run.
    """
    deadlines = deadlines or DeadlineModel()
    slots = poisson_arrival_slots(rng, rate, horizon)
    draws = workload.sample_tasks(rng, slots.size)
    tasks: list[TaskSpec] = []
    for arrival, draw in zip(slots.tolist(), draws):
        deadline = deadlines.deadline(rng, arrival, draw)
        if deadline >= horizon:
            continue
        tasks.append(
            TaskSpec(
                task_id=len(tasks),
                arrival=arrival,
                deadline=deadline,
                target=draw.target,
                curve=draw.curve,
                scaling_exponent=draw.scaling_exponent,
                family=draw.family,
            )
        )
    return tasks


def mean_required_work(workload: Workload, samples: int = 2000, seed: int = 0) -> float:
    """Monte-Carlo mean of the work a task of ``workload`` needs (fixed seed: a stable constant)."""
    draws = workload.sample_tasks(np.random.default_rng(seed), samples)
    return float(np.mean([d.curve.work_to_reach(d.target) for d in draws]))
