"""The workload interface and the episode generator every workload shares.

A workload only draws task *bodies* (a curve, a target, a scaling exponent). Arrival times and
deadlines are the same mechanism for every workload and live here, so that a new curve bank only has
to implement :meth:`Workload.sample_tasks`.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from typing import NamedTuple, Protocol

import numpy as np

from mara_env.core import LossCurve, TaskSpec, parallel_efficiency
from mara_env.workloads.arrivals import ArrivalProcess, PoissonArrivals


class TaskDraw(NamedTuple):
    """A task body drawn from a workload."""

    curve: LossCurve
    target: float
    scaling_exponent: float
    family: str
    switch_factor: float = 1.0


class Workload(Protocol):
    """Anything that draws task bodies; register it in :data:`mara_env.workloads.WORKLOADS`."""

    name: str

    def sample_tasks(self, rng: np.random.Generator, count: int) -> list[TaskDraw]: ...


def log_uniform(rng: np.random.Generator, low: float, high: float, size: int) -> np.ndarray:
    """``size`` draws whose logarithm is uniform on ``[log(low), log(high)]``."""
    return np.exp(rng.uniform(np.log(low), np.log(high), size))


def target_index(losses: np.ndarray, reduced: float) -> int:
    """First point where the best loss so far has covered ``reduced`` of the curve's whole drop.

    Kept at or after 10% of the curve, so every target needs some training.
    """
    best = np.minimum.accumulate(losses)
    threshold = losses[0] - reduced * (losses[0] - best[-1])
    first = int(np.flatnonzero(best <= threshold)[0])
    return max(first, len(losses) // 10, 1)


@dataclass(frozen=True)
class TaskScale:
    """How a recorded curve becomes a task body: where its target sits, how much work it needs,
    how well it scales over nodes and how costly its checkpoints are. The ranges are our choice.

    Parameters
    ----------
    work_range:
        Log-uniform range of a task's need: the work (node-slots at speed 1) after which its best
        loss first reaches the target.
    reduced_range:
        Uniform range of the share of the curve's whole drop covered at the target.
    scaling_range:
        Uniform range of the data-parallel scaling exponent ``alpha``.
    switch_factor_range:
        Uniform range of the task's multiplier of the cluster's switch cost.
    """

    work_range: tuple[float, float] = (4.0, 96.0)
    reduced_range: tuple[float, float] = (0.5, 0.95)
    scaling_range: tuple[float, float] = (0.6, 0.95)
    switch_factor_range: tuple[float, float] = (1.0, 1.0)

    def draw(self, rng: np.random.Generator, curves: list[np.ndarray], families: list[str]) -> list[TaskDraw]:
        """One task body per curve (losses on evenly spaced points)."""
        n = len(curves)
        reduced = rng.uniform(*self.reduced_range, n)
        work = log_uniform(rng, *self.work_range, n)
        alpha = rng.uniform(*self.scaling_range, n)
        switch = rng.uniform(*self.switch_factor_range, n)
        draws = []
        for k, losses in enumerate(curves):
            best = np.minimum.accumulate(losses)
            target = float(best[target_index(losses, reduced[k])])
            reached = int(np.flatnonzero(best <= target)[0])  # the need, in grid steps
            curve = LossCurve(losses, work_step=work[k] / reached)
            draws.append(TaskDraw(curve, target, float(alpha[k]), families[k], float(switch[k])))
        return draws


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


def arrival_rate(load: float, total_speed: float, mean_required_work: float) -> float:
    """Tasks per slot such that ``rate * mean_required_work / total_speed == load``."""
    return load * total_speed / mean_required_work


def with_need(draw: TaskDraw, need: float) -> TaskDraw:
    """The same task body stretched along the work axis so that it needs ``need`` units of work."""
    current = draw.curve.work_to_reach(draw.target)
    step = draw.curve.work_step * need / current
    if not (math.isfinite(step) and step > 0):
        raise ValueError(f"need must stretch the curve to a finite work step > 0, got need={need!r}")
    # Same losses, only the grid spacing changes: a shallow copy shares the (read-only) loss arrays
    # instead of re-validating and re-accumulating them, which dominates resets of long traces.
    curve = copy.copy(draw.curve)
    curve.work_step = step
    return draw._replace(curve=curve)


# Task bodies are drawn in chunks of this many, so a long trace's episode does not hold every
# workload's temporaries at once (episodes of at most this many tasks draw exactly as in one call).
BODY_CHUNK = 4096


def draw_bodies(workload: Workload, rng: np.random.Generator, count: int) -> list[TaskDraw]:
    """``count`` task bodies from ``workload``, in chunks of :data:`BODY_CHUNK`."""
    if count <= BODY_CHUNK:
        return workload.sample_tasks(rng, count)
    draws: list[TaskDraw] = []
    for start in range(0, count, BODY_CHUNK):
        draws += workload.sample_tasks(rng, min(BODY_CHUNK, count - start))
    return draws


def generate_episode(
    workload: Workload,
    rng: np.random.Generator,
    rate: float,
    horizon: int,
    deadlines: DeadlineModel | None = None,
    arrivals: ArrivalProcess | None = None,
) -> list[TaskSpec]:
    """Draw the tasks of one episode.

    Arrival slots come from ``arrivals`` (Poisson by default); task bodies from ``workload``; deadlines
    and needs from the arrival plan where it has them (a trace), else from ``deadlines`` and the body.
    Tasks whose deadline would fall at or past the horizon are not generated, so that every task of
    an episode is decided (completed or expired) within it; the offered load therefore tapers over
    the last slots of a run. A process with ``record_dropped`` (a trace) is told how many of its rows
    were left out (its plan's ``dropped`` plus those whose drawn deadline passed the horizon).
    """
    deadlines = deadlines or DeadlineModel()
    arrivals = arrivals or PoissonArrivals()
    plan = arrivals.plan(rng, rate, horizon)
    draws = draw_bodies(workload, rng, plan.slots.size)
    slots, due, needs = plan.slots.tolist(), plan.deadlines.tolist(), plan.needs.tolist()
    tasks: list[TaskSpec] = []
    late = 0
    for k, draw in enumerate(draws):
        arrival, need = slots[k], needs[k]
        if not math.isnan(need):  # the plan knows the need (a trace, which checked it is finite and > 0)
            draw = with_need(draw, need)
        deadline = due[k] if due[k] >= 0 else deadlines.deadline(rng, arrival, draw)
        if deadline >= horizon:
            late += 1
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
                switch_factor=draw.switch_factor,
            )
        )
    if callable(getattr(arrivals, "record_dropped", None)):  # a trace reports the rows it could not play
        arrivals.record_dropped(plan.dropped + late, horizon)
    return tasks


def mean_required_work(workload: Workload, samples: int = 2000, seed: int = 0) -> float:
    """Monte-Carlo mean of the work a task of ``workload`` needs (fixed seed: a stable constant)."""
    draws = workload.sample_tasks(np.random.default_rng(seed), samples)
    return float(np.mean([d.curve.work_to_reach(d.target) for d in draws]))
