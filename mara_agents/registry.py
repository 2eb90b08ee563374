"""Schedulers by name (``mara_agents.make(name, **kw)``) and by agent spec (:func:`load_agent`).

An *agent spec* is what ``mara bench --agents`` and ``mara compare --agents`` take:

- a registered name: ``lara``;
- a registered name and a checkpoint: ``mara:runs/mara/checkpoint.pt`` calls the factory with
  ``checkpoint=PATH``. The part after ``:`` is a checkpoint when it names an existing file, ends with
  ``.pt``/``.pth`` or contains a path separator; a dotted Python name never does;
- an import path: ``package.module:Class`` (``Class`` called with no arguments; dots allowed,
  ``Outer.Inner``; a function that returns a scheduler works too);
- any of these followed by ``@FORECASTER``: the scheduler plays on that forecaster
  (``mara_env.forecast.FORECASTERS``) instead of the env's default or the one it was trained on, e.g.
  ``srw@flow_situ``. Only a scheduler that reads forecasts takes one.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import importlib
import importlib.util
import inspect
import os
import sys
from collections.abc import Callable
from pathlib import Path

from mara_agents.base import Scheduler, requirements_of
from mara_agents.heuristics import (
    EDFScheduler,
    EDFUniformScheduler,
    RandomScheduler,
    RoundRobinScheduler,
    UniformScheduler,
)
from mara_agents.laira import LaiRAScheduler
from mara_agents.lara import LARAScheduler
from mara_agents.oracle import OracleScheduler
from mara_agents.srw import SRWScheduler
from mara_env.forecast import FORECASTERS

CHECKPOINT_SUFFIXES = (".pt", ".pth")


def _shipped_mara(which: str, kwargs: dict) -> Scheduler:
    """A MARA policy from the shipped checkpoint ``which`` (``checkpoint=`` names another one).

    Imported here, not at the top, so that ``import mara_agents`` does not load torch.
    """
    from mara_agents.mara import scheduler

    return scheduler.MARAScheduler(kwargs.pop("checkpoint", getattr(scheduler, which)), **kwargs)


def make_mara(**kwargs) -> Scheduler:
    """The MARA policy trained at one scenario (8 nodes, synthetic, the train load)."""
    return _shipped_mara("SHIPPED_CHECKPOINT", kwargs)


def make_mara_generalist(**kwargs) -> Scheduler:
    """The generalist MARA policy (trained over cluster sizes, workloads, loads and arrival processes;
    it reads the srw plan and the deadline order as hints)."""
    return _shipped_mara("GENERALIST_CHECKPOINT", kwargs)


# The factories that load a shipped checkpoint, by its name in mara_agents.mara.scheduler.
SHIPPED_FACTORIES: dict[Callable[..., Scheduler], str] = {
    make_mara: "SHIPPED_CHECKPOINT",
    make_mara_generalist: "GENERALIST_CHECKPOINT",
}


def shipped_checkpoint(name: str) -> Path | None:
    """The weights file the scheduler registered as ``name`` loads by default; ``None`` if it loads none."""
    which = SHIPPED_FACTORIES.get(SCHEDULERS.get(name))
    if which is None:
        return None
    from mara_agents.mara import scheduler

    return getattr(scheduler, which)


SCHEDULERS: dict[str, Callable[..., Scheduler]] = {
    "mara": make_mara,
    "mara_generalist": make_mara_generalist,
    "random": RandomScheduler,
    "round_robin": RoundRobinScheduler,
    "uniform": UniformScheduler,
    "edf": EDFScheduler,
    "edf_uniform": EDFUniformScheduler,
    "srw": SRWScheduler,
    "lara": LARAScheduler,
    "laira": LaiRAScheduler,
    "oracle": OracleScheduler,
}


def register(name: str, factory: Callable[..., Scheduler], overwrite: bool = False) -> None:
    """Make ``factory`` available as ``mara_agents.make(name)``.

    Raises ``ValueError`` if ``name`` is taken (pass ``overwrite=True`` to replace it on purpose), is
    not a non-empty string without ``:`` (which separates a checkpoint or an import path), or
    ``factory`` is not callable.
    """
    if not isinstance(name, str) or not name or ":" in name or name != name.strip():
        raise ValueError(f"name must be a non-empty string without ':' or surrounding spaces, got {name!r}")
    if not callable(factory):
        raise ValueError(f"factory must be callable (a class or function), got {factory!r}")
    if name in SCHEDULERS and not overwrite:
        raise ValueError(f"a scheduler named {name!r} is already registered; pass overwrite=True to replace it")
    SCHEDULERS[name] = factory


def make(name: str, **kwargs) -> Scheduler:
    """A new scheduler registered as ``name``; ``ValueError`` listing the names otherwise."""
    if name not in SCHEDULERS:
        raise ValueError(f"scheduler must be one of {sorted(SCHEDULERS)}, got {name!r}{did_you_mean(name)}")
    return SCHEDULERS[name](**kwargs)


def did_you_mean(name: str) -> str:
    """``" (did you mean 'lara'?)"`` for the closest registered name, or ``""``."""
    close = difflib.get_close_matches(name, list(SCHEDULERS), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def split_forecaster(spec: str) -> tuple[str, str | None]:
    """``(agent spec, forecaster)`` of ``SPEC@FORECASTER``; ``(spec, None)`` without one.

    The part after the last ``@`` is a forecaster unless it holds a path separator, ``:`` or ``.`` (then
    the ``@`` is part of a checkpoint's path); ``ValueError`` if it names no registered forecaster.
    """
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"an agent must be a non-empty string, got {spec!r}")
    head, at, forecaster = spec.rpartition("@")
    if not at or any(mark in forecaster for mark in ("/", os.sep, ":", ".")):
        return spec, None
    if not head or forecaster not in FORECASTERS:
        raise ValueError(f"agent {spec!r}: after '@' name a forecaster of {sorted(FORECASTERS)}, e.g. srw@flow_situ")
    return head, forecaster


def split_spec(spec: str) -> tuple[str, str, str]:
    """``(kind, head, tail)`` of an agent spec: kind is ``"name"``, ``"checkpoint"`` or ``"import"``
    (an ``@FORECASTER`` ending is dropped: see :func:`split_forecaster`)."""
    spec = split_forecaster(spec)[0]
    if ":" not in spec:
        return "name", spec, ""
    head, _, tail = spec.partition(":")
    if head in SCHEDULERS and _is_checkpoint(tail):
        return "checkpoint", head, tail
    return "import", head, tail


def _is_checkpoint(text: str) -> bool:
    path = Path(text)
    return path.suffix in CHECKPOINT_SUFFIXES or "/" in text or os.sep in text or path.is_file()


def check_spec(spec: str, search_path: str = "") -> None:
    """Check an agent spec without building the agent; ``ValueError`` saying what is wrong.

    A registered name must exist (the closest one is suggested), a checkpoint must be a file and its
    factory must take ``checkpoint=``, and the module of an import path must be findable. Whether the
    attribute exists and builds a scheduler is known only by :func:`load_agent`.
    """
    kind, head, tail = split_spec(spec)  # drops one @FORECASTER ending (and checks it), no more
    if kind == "name":
        if head not in SCHEDULERS:
            raise ValueError(
                f"unknown agent {spec!r}{did_you_mean(head)}: use a registered name "
                f"{sorted(SCHEDULERS)}, NAME:CHECKPOINT or a module:Class import path"
            )
    elif kind == "checkpoint":
        if not Path(tail).is_file():
            raise ValueError(f"agent {spec!r}: checkpoint {tail!r} is not a file")
        if not _takes_checkpoint(SCHEDULERS[head]):
            raise ValueError(f"agent {spec!r}: the scheduler {head!r} takes no checkpoint")
    else:
        if not head or not tail:
            raise ValueError(f"agent {spec!r}: expected module:Class, e.g. examples.custom_scheduler:CappedEDF")
        _add_search_path(search_path)
        try:
            found = importlib.util.find_spec(head)
        except (ImportError, ValueError) as err:
            raise ValueError(f"agent {spec!r}: cannot import module {head!r} ({type(err).__name__}: {err})") from None
        if found is None and head in SCHEDULERS:  # meant NAME:CHECKPOINT with a checkpoint that is not there
            raise ValueError(f"agent {spec!r}: checkpoint {tail!r} is not a file (and there is no module {head!r})")
        if found is None:
            raise ValueError(f"agent {spec!r}: cannot import module {head!r} (no such module)")


def _takes_checkpoint(factory: Callable) -> bool:
    try:
        params = inspect.signature(factory).parameters.values()
    except (TypeError, ValueError):
        return True  # builtins without a signature: let the call decide
    return any(p.name == "checkpoint" or p.kind is inspect.Parameter.VAR_KEYWORD for p in params)


def _add_search_path(search_path: str) -> None:
    if search_path and search_path not in sys.path:
        sys.path.insert(0, search_path)


def load_agent(spec: str, search_path: str = "") -> Scheduler:
    """A new scheduler from an agent spec (see the module docstring).

    Parameters
    ----------
    spec:
        A name of ``mara_agents.SCHEDULERS``, ``NAME:CHECKPOINT``, or ``package.module:attr`` where
        ``attr`` is called with no arguments and must return an object with ``reset(seed)`` and
        ``act(observation, agent)``.
    search_path:
        A folder put first on ``sys.path`` before importing (``mara bench`` passes the directory it
        was started in, as ``python -m`` does), so ``examples.custom_scheduler:CappedEDF`` imports
        from the repository root in every worker.

    Raises
    ------
    ValueError
        The name is unknown, the checkpoint is missing, the module does not import, or the attribute
        is missing.
    TypeError
        The attribute is not callable or does not return a scheduler.
    """
    check_spec(spec, search_path)
    spec, forecaster = split_forecaster(spec)
    scheduler = _build(spec)
    return scheduler if forecaster is None else on_forecaster(scheduler, forecaster, spec)


def on_forecaster(scheduler: Scheduler, forecaster: str, spec: str = "") -> Scheduler:
    """``scheduler``, now requiring ``forecaster`` (``ValueError`` if it reads no forecasts)."""
    needs = requirements_of(scheduler)
    if not needs.reads_forecasts:
        raise ValueError(f"agent {spec or scheduler!r} reads no forecasts, so @{forecaster} would change nothing")
    try:
        scheduler.requirements = dataclasses.replace(needs, forecaster=forecaster)
    except AttributeError as err:
        raise ValueError(f"agent {spec or scheduler!r}: cannot set its requirements ({err})") from None
    return scheduler


def _build(spec: str) -> Scheduler:
    """The scheduler of an agent spec without ``@FORECASTER`` (checked by :func:`check_spec`)."""
    kind, head, tail = split_spec(spec)
    if kind == "name":
        return make(head)
    if kind == "checkpoint":
        return make(head, checkpoint=tail)
    try:
        module = importlib.import_module(head)
    except Exception as err:
        raise ValueError(f"cannot import module {head!r} ({type(err).__name__}: {err})") from err
    try:
        factory = functools.reduce(getattr, tail.split("."), module)
    except AttributeError:
        raise ValueError(f"module {head!r} has no attribute {tail!r}") from None
    if not callable(factory):
        raise TypeError(f"{tail!r} in {head!r} is not a class or function")
    scheduler = factory()
    if not (callable(getattr(scheduler, "reset", None)) and callable(getattr(scheduler, "act", None))):
        raise TypeError(f"{tail}() returned a {type(scheduler).__name__}, without reset(seed) and act(obs, agent)")
    return scheduler
