"""Heuristic schedulers that act from the PettingZoo observation alone."""

from __future__ import annotations

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
        return pick_by_keys(allowed, obs.row("chosen_now"), moves(obs), -obs.row("age"))


class EDFScheduler(HeuristicScheduler):
    """Earliest deadline first on parallel machines: one node per task in deadline order, then a
    second round, and so on. Ties go to the task this node trained last slot.
    """

    def choose(self, obs: DecodedObservation, allowed: np.ndarray) -> int:
        return pick_by_keys(allowed, obs.row("chosen_now"), obs.row("slots_left"), moves(obs))
