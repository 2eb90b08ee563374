"""Heuristic schedulers that act from the PettingZoo observation alone."""

from __future__ import annotations

import math

import numpy as np

from mara_agents.base import NO_FORECASTS, ObservationScheduler, pick_by_keys
from mara_env.observation import DecodedObservation


def moves(obs: DecodedObservation) -> np.ndarray:
    """Per row: 0 for the row this node trained last slot (no switch cost), 1 for the others."""
    cost = np.ones(obs.layout.max_tasks)
    if obs.last_row >= 0:
        cost[obs.last_row] = 0.0
    return cost


class HeuristicScheduler(ObservationScheduler):
    """Base of the heuristics: they never read forecast features."""

    requirements = NO_FORECASTS


class RandomScheduler(HeuristicScheduler):
    """A uniformly random task among the allowed ones (idles only when none is allowed)."""

    def choose(self, obs: DecodedObservation, allowed: np.ndarray) -> int:
        return int(self.rng.choice(allowed))


class RoundRobinScheduler(HeuristicScheduler):
    """Nodes take tasks in turn: a pointer walks the table rows, node after node and slot after slot.

    With more tasks than nodes every task gets a node in rotation; with fewer, nodes wrap around.
    """

    def reset(self, seed: int | None = None) -> None:
        super().reset(seed)
        self.pointer = -1

    def choose(self, obs: DecodedObservation, allowed: np.ndarray) -> int:
        after = allowed[allowed > self.pointer]
        self.pointer = int(after[0] if after.size else allowed[0])
        return self.pointer


class UniformScheduler(HeuristicScheduler):
    """Fair share: each node joins the task with the fewest nodes so far this slot.

    Ties go to the task this node trained last slot (no switch cost), then to the oldest task.
    """

    def choose(self, obs: DecodedObservation, allowed: np.ndarray) -> int:
        return pick_by_keys(allowed, *fair_share_keys(obs))


def fair_share_keys(obs: DecodedObservation) -> tuple[np.ndarray, ...]:
    """``uniform``'s keys: fewest nodes so far this slot, then no switch, then the oldest task."""
    return obs.row("chosen_now"), moves(obs), -obs.row("age")


def deadline_keys(obs: DecodedObservation) -> tuple[np.ndarray, ...]:
    """``edf``'s keys: fewest nodes so far this slot, then the earliest deadline, then no switch."""
    return obs.row("chosen_now"), obs.row("slots_left"), moves(obs)


class EDFScheduler(HeuristicScheduler):
    """Earliest deadline first on parallel machines: one node per task in deadline order, then a
    second round, and so on. Ties go to the task this node trained last slot.
    """

    def choose(self, obs: DecodedObservation, allowed: np.ndarray) -> int:
        return pick_by_keys(allowed, *deadline_keys(obs))


def tasks_in_system(obs: DecodedObservation) -> int:
    """Tasks in the system: those in the table and those queued for a row."""
    return round((obs.globals["live_tasks"] + obs.globals["queued_tasks"]) * obs.layout.max_tasks)


class EDFUniformScheduler(HeuristicScheduler):
    """``edf`` while the cluster keeps up, ``uniform``'s fair share once it is crowded.

    Crowded: the tasks in the system (in the table and queued for a row) outnumber ``crowd`` times the
    table's rows (``K_max``); at the default 1, some task waits for a row. Under such overload ``edf``
    moves nodes to whichever deadlines are nearest each slot and pays switches for tasks it cannot save;
    keeping nodes where they are (``uniform``'s tie-break) wastes less. The default was chosen on
    validation episodes (``benchmarks/crowd_threshold.py``); ``last_path`` is the rule of the latest
    decision, ``"edf"`` or ``"uniform"`` (a MARA teacher labels its gate with it).
    """

    def __init__(self, seed: int | None = 0, crowd: float = 1.0) -> None:
        if isinstance(crowd, bool) or not (isinstance(crowd, (int, float)) and math.isfinite(crowd) and crowd > 0):
            raise ValueError(f"crowd must be a finite share of the table's rows, > 0; got {crowd!r}")
        super().__init__(seed)
        self.crowd = float(crowd)
        self.last_path = "edf"

    def crowded(self, obs: DecodedObservation) -> bool:
        """Whether the tasks in the system outnumber ``crowd`` times the table's rows."""
        return tasks_in_system(obs) > self.crowd * obs.layout.max_tasks

    def path(self, obs: DecodedObservation) -> str:
        """The rule this scheduler follows on ``obs``: ``"uniform"`` when crowded, else ``"edf"``."""
        return "uniform" if self.crowded(obs) else "edf"

    def choose(self, obs: DecodedObservation, allowed: np.ndarray) -> int:
        self.last_path = self.path(obs)
        keys = fair_share_keys(obs) if self.last_path == "uniform" else deadline_keys(obs)
        return pick_by_keys(allowed, *keys)
