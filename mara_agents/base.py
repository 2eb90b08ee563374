"""The ``Scheduler`` protocol, what a scheduler declares it needs from the env, and the base class.

A scheduler acts on observations alone; what the env must compute for it (forecast features, a
particular forecaster, a history window) it declares in one typed place, its ``requirements``
(:class:`EnvRequirements`). ``evaluate``, ``mara bench`` and the MARA teacher read that place and
nothing else (:func:`requirements_of`, :func:`mara_agents.evaluation.env_config`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from mara_env.config import DEFAULTS, FIELD_NAMES
from mara_env.observation import DecodedObservation, decode


@dataclass(frozen=True)
class EnvRequirements:
    """What a scheduler needs from the env it plays.

    Parameters
    ----------
    reads_forecasts:
        The scheduler reads the forecast features. If ``False`` the runner plays it on an env without a
        forecaster (``forecaster="none"``, which changes nothing it sees and saves time) unless the user
        names one; if ``True``, an env configured with ``forecaster="none"`` is an error.
    forecaster:
        A forecaster it needs exactly (``"oracle"`` for the clairvoyant scheduler, ``"none"`` for a
        policy trained without forecasts), or ``None``: whichever the env is configured with, by
        default the env's default forecaster.
    settings:
        Other env settings it needs fixed, e.g. ``{"history_window": 8}`` for a network trained on that
        window; asking for a different value is an error, not a silently wrong run.
    """

    reads_forecasts: bool = True
    forecaster: str | None = None
    settings: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        unknown = sorted(set(self.settings) - FIELD_NAMES)
        if unknown:
            raise ValueError(f"requirements name unknown env settings {unknown}; allowed: {sorted(FIELD_NAMES)}")
        if "forecaster" in self.settings:
            raise ValueError("name the forecaster with EnvRequirements(forecaster=...), not in settings")

    @classmethod
    def trained_on(
        cls, env_kwargs: Mapping[str, Any], shape: tuple[str, ...] = ("history_window", "calibrate_forecasts")
    ) -> EnvRequirements:
        """The requirements of a policy trained on ``raw_env(**env_kwargs)``: the same forecaster (the
        env's default if none was named) and the same values of the ``shape`` settings it names."""
        forecaster = env_kwargs.get("forecaster", DEFAULTS.forecaster)
        settings = {key: env_kwargs[key] for key in shape if key in env_kwargs}
        return cls(reads_forecasts=forecaster != "none", forecaster=forecaster, settings=settings)


NO_FORECASTS = EnvRequirements(reads_forecasts=False)


@runtime_checkable
class Scheduler(Protocol):
    """Chooses one node's action from that node's observation alone.

    One scheduler instance acts for every node of an episode, node after node and slot after slot,
    so it may keep memory across calls (a plan made at the first node's turn, a rotation pointer).
    """

    requirements: EnvRequirements
    """What the env must provide (see :class:`EnvRequirements`)."""

    def reset(self, seed: int | None = None) -> None:
        """Start a new episode; ``seed`` seeds any randomness of the scheduler."""

    def act(self, observation: dict, agent: str) -> int:
        """Return an allowed action: 0 = idle, ``j`` = the task in table row ``j - 1``."""


def requirements_of(scheduler: object) -> EnvRequirements:
    """A scheduler's declared requirements; one that declares none gets the env's default forecasts."""
    found = getattr(scheduler, "requirements", None)
    if found is None:
        return EnvRequirements()
    if not isinstance(found, EnvRequirements):
        raise TypeError(f"{type(scheduler).__name__}.requirements must be an EnvRequirements, got {found!r}")
    return found


class ObservationScheduler:
    """Base class: decodes the observation and hands the allowed rows to :meth:`choose`.

    By default it gets the env's forecast features (``requirements = EnvRequirements()``); a subclass
    that never reads them opts out with ``requirements = NO_FORECASTS``.

    Parameters
    ----------
    seed:
        Seed of the scheduler's own generator until the next :meth:`reset`.
    """

    requirements: EnvRequirements = EnvRequirements()

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


def pick_by_keys(allowed: np.ndarray, *keys: np.ndarray) -> int:
    """The allowed row with the lexicographically smallest keys (first key most significant)."""
    order = np.lexsort(tuple(k[allowed] for k in reversed(keys)))
    return int(allowed[order[0]])
