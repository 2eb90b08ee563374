"""Heuristic schedulers that act from the PettingZoo observation alone."""

from __future__ import annotations

import numpy as np

from mara_agents.base import ObservationScheduler, last_row, pick_by_keys
from mara_env.observation import DecodedObservation


def moves(obs: DecodedObservation) -> np.ndarray:
    """Per row: 0 for the row this node trained last slot (no switch cost), 1 for the others."""
    cost = np.ones(obs.layout.max_tasks)
    if last_row(obs) >= 0:
        cost[last_row(obs)] = 0.0
    return cost


class RandomScheduler(ObservationScheduler):
    """A uniformly random task among the allowed ones (idles only when none is allowed)."""

    def choose(self, obs: DecodedObservation, allowed: np.ndarray) -> int:
        return int(self.rng.choice(allowed))


class RoundRobinScheduler(ObservationScheduler):
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


class UniformScheduler(ObservationScheduler):
    """Fair share: each node joins the task with the fewest nodes so far this slot.

    Ties go to the task this node trained last slot (no switch cost), then to the oldest task.
    """

    def choose(self, obs: DecodedObservation, allowed: np.ndarray) -> int:
        return pick_by_keys(allowed, obs.row("chosen_now"), moves(obs), -obs.row("age"))


class EDFScheduler(ObservationScheduler):
    """Earliest deadline first on parallel machines: one node per task in deadline order, then a
    second round, and so on. Ties go to the task this node trained last slot.
    """

    def choose(self, obs: DecodedObservation, allowed: np.ndarray) -> int:
        return pick_by_keys(allowed, obs.row("chosen_now"), obs.row("slots_left"), moves(obs))
