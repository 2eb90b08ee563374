"""The slot-by-slot cluster simulator (semantics in docs/environment.md). Pure numpy; no PettingZoo.

One call to :meth:`Simulator.step` plays one slot: every node trains the task in the table row it was
assigned (or idles), tasks gain work and report a loss, tasks that reached their target complete,
tasks whose deadline was this slot expire, then the clock advances and new arrivals are admitted.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np

from mara_env.core.config import SimConfig
from mara_env.core.metrics import RunCounters
from mara_env.core.task import TaskSpec, TaskState, parallel_efficiency

IDLE = -1


@dataclass
class SlotResult:
    """What happened in one slot."""

    slot: int
    completed: list[int] = field(default_factory=list)
    expired: list[int] = field(default_factory=list)
    work: dict[int, float] = field(default_factory=dict)
    switches: int = 0


@runtime_checkable
class TaskSource(Protocol):
    """An episode whose tasks are made slot by slot as they arrive (a long replayed trace), not at reset.

    ``arriving(slot)`` must give the same tasks whenever it is called, and ids unique in the episode.
    """

    def arriving(self, slot: int) -> list[TaskSpec]:
        """The tasks whose arrival is ``slot``, by task id."""
        ...

    def all_tasks(self) -> tuple[TaskSpec, ...]:
        """Every task of the episode, by arrival."""
        ...


class Simulator:
    """A cluster of ``num_nodes`` nodes serving the tasks of one episode.

    Parameters
    ----------
    config:
        The cluster's static parameters.
    tasks:
        Every task of the episode (any order; admitted when their arrival slot comes), or a
        :class:`TaskSource` asked for each slot's arrivals when the slot begins.
    """

    def __init__(self, config: SimConfig, tasks: Sequence[TaskSpec] | TaskSource) -> None:
        self.config = config
        self._source = tasks if isinstance(tasks, TaskSource) else None
        if self._source is None:
            self._tasks = sorted(tasks, key=lambda t: (t.arrival, t.task_id))
            ids = [t.task_id for t in self._tasks]
            if len(set(ids)) != len(ids):
                raise ValueError("task_id values must be unique within an episode")
        self.speeds = config.speeds()
        self.speeds_list = self.speeds.tolist()
        self.reset()

    # ------------------------------------------------------------------ state
    def reset(self) -> None:
        """Back to slot 0 with the same tasks."""
        cfg = self.config
        self.slot = 0
        self.rows: list[TaskState | None] = [None] * cfg.max_tasks
        self.queue: deque[TaskState] = deque()
        self.node_up = np.ones(cfg.num_nodes, dtype=bool)
        self.last_row = np.full(cfg.num_nodes, IDLE, dtype=np.int64)  # row trained last slot
        self.last_task = np.full(cfg.num_nodes, IDLE, dtype=np.int64)  # its task id
        self.counters = RunCounters()
        self._next_arrival = 0
        self._admit()

    @property
    def done(self) -> bool:
        """True once all ``horizon`` slots have been played."""
        return self.slot >= self.config.horizon

    @property
    def tasks(self) -> tuple[TaskSpec, ...]:
        """Every task of the episode, by arrival (what oracles and the LP ceiling may know).

        From a :class:`TaskSource` this makes every task of the episode (costly for a long trace)."""
        return tuple(self._tasks) if self._source is None else self._source.all_tasks()

    def iter_tasks(self) -> Iterator[TaskSpec]:
        """Every task of the episode, by arrival, in one pass that keeps none of them.

        A :class:`TaskSource` makes each slot's tasks again on request (the same ones), one slot at
        a time, where :attr:`tasks` would hold them all at once (the LP ceiling reads this)."""
        if self._source is None:
            yield from self._tasks
            return
        for slot in range(self.config.horizon):
            yield from self._source.arriving(slot)

    def live_tasks(self) -> list[TaskState]:
        """Tasks in the table (schedulable)."""
        return [t for t in self.rows if t is not None]

    def num_live(self) -> int:
        """Tasks in the system: in the table or waiting in the admission queue."""
        return sum(t is not None for t in self.rows) + len(self.queue)

    def potential(self) -> float:
        """``Phi`` = summed progress toward target of the tasks in the system."""
        return float(sum(t.progress for t in self.rows if t is not None))

    def set_node_up(self, node: int, up: bool) -> None:
        """Bring a node down (it can only idle) or back up."""
        if not 0 <= node < self.config.num_nodes:
            raise ValueError(f"node must be in [0, {self.config.num_nodes - 1}], got {node}")
        self.node_up[node] = bool(up)

    def metrics(self) -> dict[str, float]:
        """Metrics of the run so far (see :class:`RunCounters`), with ``availability``: the share of
        node-slots in which nodes were up."""
        metrics = self.counters.metrics(live=self.num_live())
        slots = self.counters.slots * self.config.num_nodes
        metrics["availability"] = self.counters.up_node_slots / slots if slots else 1.0
        return metrics

    # ------------------------------------------------------------------ dynamics
    def check_assignment(self, assignment: Sequence[int]) -> np.ndarray:
        """Validate one slot's assignment (row per node, ``-1`` = idle); raise ``ValueError`` if bad."""
        cfg = self.config
        if self.done:
            raise ValueError(f"the run is over: all {cfg.horizon} slots have been played; call reset()")
        rows = np.asarray(assignment)
        if rows.shape != (cfg.num_nodes,) or not np.issubdtype(rows.dtype, np.integer):
            raise ValueError(f"assignment must be {cfg.num_nodes} integers (row or -1), got {assignment!r}")
        for node, row in enumerate(rows.tolist()):
            if row == IDLE:
                continue
            if not 0 <= row < cfg.max_tasks:
                raise ValueError(f"node {node}: row must be -1 (idle) or in [0, {cfg.max_tasks - 1}], got {row}")
            if not self.node_up[node]:
                raise ValueError(f"node {node} is down and may only idle, got row {row}")
            task = self.rows[row]
            if task is None:
                raise ValueError(f"node {node}: row {row} is empty")
            if task.spec.deadline < self.slot:
                raise ValueError(f"node {node}: task in row {row} is past its deadline")
        return rows.astype(np.int64)

    def step(self, assignment: Sequence[int]) -> SlotResult:
        """Play one slot. Validates first: a bad assignment raises and changes nothing."""
        rows = self.check_assignment(assignment)
        result = SlotResult(slot=self.slot)
        trained = self._train(rows, result)
        self._finish(trained, result)
        self._expire(result)
        self.slot += 1
        self.counters.slots += 1
        if not self.done:
            self._admit()
        return result

    def _train(self, rows: np.ndarray, result: SlotResult) -> list[TaskState]:
        cfg, counters = self.config, self.counters
        counters.up_node_slots += int(self.node_up.sum())
        groups: dict[int, list[int]] = {}
        for node, row in enumerate(rows.tolist()):
            if row != IDLE:
                groups.setdefault(row, []).append(node)
        last_task, speeds = self.last_task.tolist(), self.speeds_list
        new_last_task = [IDLE] * cfg.num_nodes
        trained: list[TaskState] = []
        for task in self.live_tasks():
            task.nodes_last_slot = 0
        for row, nodes in groups.items():
            task = self.rows[row]
            task_id = task.spec.task_id
            effective, switched = 0.0, 0
            lost = min(cfg.switch_cost * task.spec.switch_factor, 1.0)
            for node in nodes:
                if last_task[node] == task_id:
                    effective += speeds[node]
                else:  # restored from a checkpoint: part of the slot is lost
                    effective += speeds[node] * (1.0 - lost)
                    switched += 1
                new_last_task[node] = task_id
            work = effective * parallel_efficiency(len(nodes), task.spec.scaling_exponent)
            task.train(work)
            task.nodes_last_slot = len(nodes)
            result.work[task_id] = work
            result.switches += switched
            counters.credited_work += work
            counters.busy_node_slots += len(nodes)
            trained.append(task)
        counters.switches += result.switches
        self.last_task = np.asarray(new_last_task, dtype=np.int64)
        self.last_row = rows.copy()
        return trained

    def _finish(self, trained: list[TaskState], result: SlotResult) -> None:
        for task in trained:
            if task.reached_target:
                self.rows[task.row] = None
                self.counters.completed += 1
                result.completed.append(task.spec.task_id)

    def _expire(self, result: SlotResult) -> None:
        counters = self.counters
        queued: set[int] = set()  # ids of expiring tasks that wait in the queue
        for task in self.live_tasks() + list(self.queue):
            if task.spec.deadline > self.slot:
                continue
            if task.row >= 0:
                self.rows[task.row] = None
            else:
                queued.add(id(task))
            counters.expired += 1
            counters.wasted_work += task.work
            need = task.spec.required_work
            counters.failure_shortfall_sum += max(0.0, 1.0 - task.work / need) if np.isfinite(need) else 1.0
            result.expired.append(task.spec.task_id)
        if queued:  # one pass, not deque.remove per task (a long trace can queue thousands)
            kept = [task for task in self.queue if id(task) not in queued]
            self.queue.clear()
            self.queue.extend(kept)

    def _arrivals(self) -> list[TaskSpec]:
        """This slot's new tasks (every slot is admitted once, in order)."""
        if self._source is not None:
            return self._source.arriving(self.slot)
        start = self._next_arrival
        while self._next_arrival < len(self._tasks) and self._tasks[self._next_arrival].arrival <= self.slot:
            self._next_arrival += 1
        return self._tasks[start : self._next_arrival]

    def _admit(self) -> None:
        """Queue this slot's arrivals, then give free table rows to the queue in FIFO order."""
        for spec in self._arrivals():
            self.queue.append(TaskState(spec))
            self.counters.arrived += 1
        for row, occupant in enumerate(self.rows):
            if not self.queue:
                break
            if occupant is None:
                task = self.queue.popleft()
                task.row = row
                self.rows[row] = task
