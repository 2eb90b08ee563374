"""The ``Scheduler`` protocol every agent implements, and helpers shared by the heuristics."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

from mara_env.observation import DecodedObservation, decode


@runtime_checkable
class Scheduler(Protocol):
    """Chooses one node's action from that node's observation alone.

    One scheduler instance acts for every node of an episode, node after node and slot after slot,
    so it may keep memory across calls (a plan made at the first node's turn, a rotation pointer).
    """

    def reset(self, seed: int | None = None) -> None:
        """Start a new episode; ``seed`` seeds any randomness of the scheduler."""

    def act(self, observation: dict, agent: str) -> int:
        """Return an allowed action: 0 = idle, ``j`` = the task in table row ``j - 1``."""


class ObservationScheduler:
    """Base class: decodes the observation and hands the allowed rows to :meth:`choose`.

    Parameters
    ----------
    seed:
        Seed of the scheduler's own generator until the next :meth:`reset`.
    """

    # Env settings the runner uses unless told otherwise: most schedulers ignore forecast features.
    default_env_kwargs = {"forecaster": "none"}

    def __init__(self, seed: int | None = 0) -> None:
        self.reset(seed)

    def reset(self, seed: int | None = None) -> None:
        self.rng = np.random.default_rng(seed)

    def act(self, observation: dict, agent: str) -> int:
        allowed = np.flatnonzero(np.asarray(observation["action_mask"])[1:])
        if allowed.size == 0:
            return 0
        row = self.choose(decode(observation), allowed)
        return 0 if row is None else int(row) + 1

    def choose(self, obs: DecodedObservation, allowed: np.ndarray) -> int | None:
        """The row (0-based) to train among ``allowed``, or ``None`` to idle."""
        raise NotImplementedError


def last_row(obs: DecodedObservation) -> int:
    """The row this node trained last slot (-1 if it idled)."""
    return int(round(obs.node["last_action"] * obs.layout.max_tasks)) - 1


def pick_by_keys(allowed: np.ndarray, *keys: np.ndarray) -> int:
    """The allowed row with the lexicographically smallest keys (first key most significant)."""
    order = np.lexsort(tuple(k[allowed] for k in reversed(keys)))
    return int(allowed[order[0]])
