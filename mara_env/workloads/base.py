"""The workload interface and the episode generator every workload shares.

A workload only draws task *bodies* (a curve, a target, a scaling exponent). Arrival times and
deadlines are the same mechanism for every workload and live here, so that a new curve bank only has
to implement :meth:`Workload.sample_tasks`.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import NamedTuple, Protocol

import numpy as np

from mara_env.core import LossCurve, TaskSpec, parallel_efficiency
from mara_env.workloads.arrivals import ArrivalProcess, PoissonArrivals
from mara_env.workloads.plan import ArrivalPlan


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
) -> list[TaskSpec] | LazyEpisode:
    """Draw the tasks of one episode.

    Arrival slots come from ``arrivals`` (Poisson by default); task bodies from ``workload``; deadlines
    and needs from the arrival plan where it has them (a trace), else from ``deadlines`` and the body.
    Tasks whose deadline would fall at or past the horizon are not generated, so that every task of
    an episode is decided (completed or expired) within it; the offered load therefore tapers over
    the last slots of a run. A process with ``record_dropped`` (a trace) is told how many of its rows
    were left out (its plan's ``dropped`` plus those whose drawn deadline passed the horizon).

    A process with ``lazy_bodies`` (a trace) gets a :class:`LazyEpisode` instead of a list: two words
    drawn from ``rng`` seed every slot's bodies, which are drawn only when the simulator admits the slot.
    """
    deadlines = deadlines or DeadlineModel()
    arrivals = arrivals or PoissonArrivals()
    plan = arrivals.plan(rng, rate, horizon)
    if getattr(arrivals, "lazy_bodies", False):
        key = rng.integers(0, 2**64, size=2, dtype=np.uint64)
        return LazyEpisode(workload, plan, key, horizon, deadlines, arrivals)
    draws = draw_bodies(workload, rng, plan.slots.size)
    tasks, late = make_tasks(draws, rng, plan, slice(0, plan.slots.size), horizon, deadlines)
    if callable(getattr(arrivals, "record_dropped", None)):  # a trace reports the rows it could not play
        arrivals.record_dropped(plan.dropped + late, horizon)
    return tasks


def make_tasks(
    draws: list[TaskDraw],
    rng: np.random.Generator,
    plan: ArrivalPlan,
    part: slice,
    horizon: int,
    deadlines: DeadlineModel,
    plan_ids: bool = False,
) -> tuple[list[TaskSpec], int]:
    """The tasks of the plan's entries ``part`` (one body each, in order), and how many were left out
    because their deadline falls at or past the horizon. Task ids count the tasks kept, or are the
    entries' places in the plan (``plan_ids``). Deadlines the plan lacks are drawn from ``rng``, in order."""
    slots, due, needs = plan.slots[part].tolist(), plan.deadlines[part].tolist(), plan.needs[part].tolist()
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
                task_id=part.start + k if plan_ids else len(tasks),
                arrival=arrival,
                deadline=deadline,
                target=draw.target,
                curve=draw.curve,
                scaling_exponent=draw.scaling_exponent,
                family=draw.family,
                switch_factor=draw.switch_factor,
            )
        )
    return tasks, late


class LazyEpisode:
    """The tasks of an episode replaying a trace, made slot by slot when the simulator admits them.

    Every slot's bodies (and the deadlines the plan lacks) are drawn from that slot's own generator,
    seeded by ``key`` and the slot, so a slot's tasks are the same whenever and however often they
    are made. Task ids are the places in the plan (gaps where a row is not played). Rows whose drawn
    deadline falls at or past the horizon are counted when their slot is made (:attr:`dropped`), and
    reported to ``arrivals.record_dropped`` as they are found.
    """

    def __init__(
        self,
        workload: Workload,
        plan: ArrivalPlan,
        key: np.ndarray,
        horizon: int,
        deadlines: DeadlineModel,
        arrivals: ArrivalProcess | None = None,
    ) -> None:
        self.workload, self.plan, self.horizon, self.deadlines = workload, plan, horizon, deadlines
        self.key = [int(k) for k in key]
        self._bounds = np.searchsorted(plan.slots, np.arange(horizon + 1), side="left").tolist()
        self._late = [-1] * horizon  # rows of each slot not played for a drawn deadline (-1: not made yet)
        self.dropped = plan.dropped  # rows not played, found so far
        self._undrawn = int(np.count_nonzero(plan.deadlines < 0))  # rows whose deadline is still to draw
        self._arrivals = arrivals if callable(getattr(arrivals, "record_dropped", None)) else None
        self._record()

    def slot_rng(self, slot: int) -> np.random.Generator:
        """The generator of ``slot``'s bodies and deadlines."""
        return np.random.Generator(np.random.PCG64(np.random.SeedSequence(self.key, spawn_key=(slot,))))

    def arriving(self, slot: int) -> list[TaskSpec]:
        """The tasks arriving in ``slot``, made now (the same ones at every call)."""
        if not 0 <= slot < self.horizon or self._bounds[slot] == self._bounds[slot + 1]:
            return []
        part = slice(self._bounds[slot], self._bounds[slot + 1])
        rng = self.slot_rng(slot)
        draws = draw_bodies(self.workload, rng, part.stop - part.start)
        tasks, late = make_tasks(draws, rng, self.plan, part, self.horizon, self.deadlines, plan_ids=True)
        if self._late[slot] < 0:  # first made: count its rows due past the horizon once
            self._late[slot] = late
            self._undrawn -= int(np.count_nonzero(self.plan.deadlines[part] < 0))
            self.dropped += late
            if late or not self._undrawn:
                self._record()
        return tasks

    def _record(self) -> None:
        if self._arrivals is not None:
            self._arrivals.record_dropped(self.dropped, self.horizon, final=not self._undrawn)

    def all_tasks(self) -> tuple[TaskSpec, ...]:
        """Every task of the episode, by arrival: every slot made now (costly for a long trace)."""
        return tuple(task for slot in range(self.horizon) for task in self.arriving(slot))

    def __iter__(self) -> Iterator[TaskSpec]:
        """The tasks slot by slot, each slot made when reached."""
        for slot in range(self.horizon):
            yield from self.arriving(slot)


def mean_required_work(workload: Workload, samples: int = 2000, seed: int = 0) -> float:
    """Monte-Carlo mean of the work a task of ``workload`` needs (fixed seed: a stable constant)."""
    draws = workload.sample_tasks(np.random.default_rng(seed), samples)
    return float(np.mean([d.curve.work_to_reach(d.target) for d in draws]))
