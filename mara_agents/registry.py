"""Schedulers by name: ``mara_agents.make(name, **kw)``."""

from __future__ import annotations

from collections.abc import Callable

from mara_agents.base import Scheduler
from mara_agents.heuristics import EDFScheduler, RandomScheduler, RoundRobinScheduler, UniformScheduler
from mara_agents.laira import LaiRAScheduler
from mara_agents.lara import LARAScheduler
from mara_agents.oracle import OracleScheduler
from mara_agents.srw import SRWScheduler


def make_mara(**kwargs) -> Scheduler:
    """The MARA policy from the shipped checkpoint (``checkpoint=`` names another one).

    Imported here, not at the top, so that ``import mara_agents`` does not load torch.
    """
    from mara_agents.mara.scheduler import SHIPPED_CHECKPOINT, MARAScheduler

    return MARAScheduler(kwargs.pop("checkpoint", SHIPPED_CHECKPOINT), **kwargs)


SCHEDULERS: dict[str, Callable[..., Scheduler]] = {
    "mara": make_mara,
    "random": RandomScheduler,
    "round_robin": RoundRobinScheduler,
    "uniform": UniformScheduler,
    "edf": EDFScheduler,
    "srw": SRWScheduler,
    "lara": LARAScheduler,
    "laira": LaiRAScheduler,
    "oracle": OracleScheduler,
}


def register(name: str, factory: Callable[..., Scheduler]) -> None:
    """Make ``factory`` available as ``mara_agents.make(name)``."""
    SCHEDULERS[name] = factory


def make(name: str, **kwargs) -> Scheduler:
    """A new scheduler registered as ``name``; ``ValueError`` listing the names otherwise."""
    if name not in SCHEDULERS:
        raise ValueError(f"scheduler must be one of {sorted(SCHEDULERS)}, got {name!r}")
    return SCHEDULERS[name](**kwargs)
