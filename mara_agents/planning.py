"""Slot planners: schedulers that plan the whole slot at the first node's turn.

A :class:`PlanningScheduler` estimates each task's remaining work from the observation (and its own
memory of past observations), decides how many nodes every task gets this slot, and then answers
every node of the slot from that plan: a node stays on the task it trained last slot while the plan
still wants nodes there (no switch cost), otherwise it takes the first task in plan order that is
short of nodes. Multi-node scaling is respected through each task's ``scaling_exponent``.
"""

from __future__ import annotations

import numpy as np

from mara_agents.base import ObservationScheduler
from mara_env.observation import DecodedObservation

# Share of a node's first slot on a task lost to checkpoint restore, as planners assume it (the
# env's switch cost is not in the observation; 0.1 is its default).
ASSUMED_SWITCH_LOSS = 0.1


def capacity(nodes: np.ndarray, slots: np.ndarray, alpha: np.ndarray) -> np.ndarray:
    """Work ``nodes`` speed-1 nodes deliver over ``slots`` slots, paying one switch each."""
    n = np.maximum(nodes, 0)
    return np.where(n > 0, (slots - ASSUMED_SWITCH_LOSS) * n**alpha, 0.0)


def min_nodes(remaining: np.ndarray, slots: np.ndarray, alpha: np.ndarray, max_nodes: int) -> np.ndarray:
    """Fewest nodes (1..max_nodes) that finish ``remaining`` in ``slots``; ``max_nodes + 1`` if none do."""
    if max_nodes < 1:  # no count to try (argmax needs at least one)
        return np.full(remaining.shape, max_nodes + 1)
    # every candidate count at once (a loop over 1..max_nodes cost 64 passes at 64 nodes)
    counts = np.arange(1, max_nodes + 1)
    fits = capacity(counts, slots[..., None], alpha[..., None]) >= remaining[..., None]
    return np.where(fits.any(axis=-1), fits.argmax(axis=-1) + 1, max_nodes + 1)


def greedy_allocation(
    remaining: np.ndarray,
    slots: np.ndarray,
    alpha: np.ndarray,
    nodes: int,
    order: np.ndarray,
    fewest_nodes_first: bool = True,
    hedge: bool = True,
) -> np.ndarray:
    """Nodes per task: admitted tasks get the fewest nodes that finish them; spare nodes go to them.

    Candidates (``order``, best first) are admitted while nodes remain, in increasing order of the
    nodes they need (ties kept in ``order``; this admits the most tasks) or, with
    ``fewest_nodes_first=False``, in ``order`` itself. Spare nodes then go one at a time to the
    admitted task whose finishing is tightest (remaining / capacity largest); with none admitted
    they idle. With ``hedge`` (for
    planners whose estimates may be wrong) spare nodes first give one node to each candidate that
    was not admitted, best first.
    """
    counts = np.zeros(remaining.shape, dtype=np.int64)
    if nodes <= 0 or order.size == 0:
        return counts
    need = min_nodes(remaining[order], slots[order], alpha[order], nodes)
    free = nodes
    sequence = np.argsort(need, kind="stable") if fewest_nodes_first else np.arange(order.size)
    for k in sequence:
        if need[k] <= free:
            counts[order[k]] = need[k]
            free -= need[k]
    for k in order if hedge else ():  # one spare node each for the candidates not admitted
        if free == 0:
            break
        if counts[k] == 0:
            counts[k], free = 1, free - 1
    admitted = np.flatnonzero(counts)
    while free > 0 and admitted.size:  # with nothing admitted, nodes idle rather than waste work
        tightness = remaining[admitted] / np.maximum(capacity(counts[admitted], slots[admitted], alpha[admitted]), 1e-9)
        counts[admitted[int(np.argmax(tightness))]] += 1
        free -= 1
    return counts


class RowMemory:
    """Full (work, loss) history of every table row, rebuilt from the observation windows.

    Rows are stable for a task's life; a new task in a row is noticed by its age or work going back.
    """

    def __init__(self) -> None:
        self.work: dict[int, list[float]] = {}
        self.loss: dict[int, list[float]] = {}
        self._age: dict[int, float] = {}

    def update(self, obs: DecodedObservation) -> None:
        present, ages = obs.present, obs.row("age")
        for row in np.flatnonzero(present).tolist():
            work, loss = (values.tolist() for values in obs.window_points(row))
            if row not in self.work or ages[row] < self._age[row] or work[0] < self.work[row][0] and len(work) > 1:
                self.work[row], self.loss[row] = [], []
            known = self.work[row]
            for w, v in zip(work, loss):
                if not known or w > known[-1]:
                    known.append(w)
                    self.loss[row].append(v)
            self._age[row] = ages[row]
        for row in [r for r in self.work if not present[r]]:
            del self.work[row], self.loss[row], self._age[row]

    def history(self, row: int) -> tuple[np.ndarray, np.ndarray]:
        return np.asarray(self.work.get(row, [])), np.asarray(self.loss.get(row, []))


class PlanningScheduler(ObservationScheduler):
    """Base class: plans a slot with :meth:`plan` at its first turn, then fills nodes from the plan."""

    def reset(self, seed: int | None = None) -> None:
        super().reset(seed)
        self.counts = np.zeros(0, dtype=np.int64)
        self._slot_key: tuple[float, float] | None = None
        self.memory = RowMemory()

    def choose(self, obs: DecodedObservation, allowed: np.ndarray) -> int | None:
        key = (obs.globals["time"], obs.globals["live_tasks"])
        if obs.globals["free_nodes"] >= 1.0 or key != self._slot_key or self.counts.size != obs.layout.max_tasks:
            self.memory.update(obs)
            self.counts = self.plan(obs)
            self._slot_key = key
        short = self.counts > obs.nodes_taken
        mine = obs.last_row
        if mine >= 0 and short[mine] and mine in allowed:
            return mine
        wanted = [row for row in self.plan_order if short[row] and row in allowed]
        return wanted[0] if wanted else None

    def plan(self, obs: DecodedObservation) -> np.ndarray:
        """Nodes per row for this slot; sets :attr:`plan_order` (rows in priority order)."""
        raise NotImplementedError

    @staticmethod
    def explore(obs: DecodedObservation, rows: np.ndarray, nodes: int) -> tuple[np.ndarray, np.ndarray]:
        """One node for each of ``rows`` (in order) while nodes last: (nodes per row, rows served)."""
        served = rows[: max(nodes, 0)]
        counts = np.zeros(obs.layout.max_tasks, dtype=np.int64)
        counts[served] = 1
        return counts, served
