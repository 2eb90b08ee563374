"""Arrival processes: when tasks arrive (and, for traces, their deadlines and sizes).

Every process returns an :class:`ArrivalPlan`: one entry per task with its arrival slot, and a
deadline slot and a required work where the process knows them (a trace), ``-1`` / ``nan`` where
the episode generator should draw them.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple, Protocol

import numpy as np


class ArrivalPlan(NamedTuple):
    """Arrival slot of every task (sorted), with the deadline (-1: draw it) and need (nan: draw it)."""

    slots: np.ndarray
    deadlines: np.ndarray
    needs: np.ndarray


def _plan(slots: np.ndarray) -> ArrivalPlan:
    return ArrivalPlan(slots, np.full(slots.size, -1, dtype=np.int64), np.full(slots.size, np.nan))


class ArrivalProcess(Protocol):
    """When tasks arrive over ``horizon`` slots at a mean ``rate`` (tasks per slot)."""

    name: str

    def plan(self, rng: np.random.Generator, rate: float, horizon: int) -> ArrivalPlan: ...


class PoissonArrivals:
    """``Poisson(rate)`` arrivals in every slot, independently."""

    name = "poisson"

    def plan(self, rng: np.random.Generator, rate: float, horizon: int) -> ArrivalPlan:
        counts = rng.poisson(rate, size=horizon)
        return _plan(np.repeat(np.arange(horizon), counts))


@dataclass(frozen=True)
class BurstyArrivals:
    """A two-state Markov-modulated Poisson process with the same mean rate as Poisson.

    In the ``burst`` state arrivals come at ``burst_factor x`` the rate of the calm state; the chain
    stays in a burst for ``burst_slots`` slots on average and spends ``burst_share`` of the time there.
    The calm rate is set so that the long-run mean is ``rate``.
    """

    burst_factor: float = 6.0
    burst_share: float = 0.2
    burst_slots: float = 10.0
    name: str = "bursty"

    def rates(self, rate: float) -> tuple[float, float]:
        """(calm, burst) rates whose stationary mean is ``rate``."""
        calm = rate / (1.0 - self.burst_share + self.burst_share * self.burst_factor)
        return calm, calm * self.burst_factor

    def plan(self, rng: np.random.Generator, rate: float, horizon: int) -> ArrivalPlan:
        calm, burst = self.rates(rate)
        leave = 1.0 / self.burst_slots
        enter = leave * self.burst_share / (1.0 - self.burst_share)  # keeps the burst share stationary
        state = rng.random() < self.burst_share
        flips = rng.random(horizon)
        in_burst = np.empty(horizon, dtype=bool)
        for t in range(horizon):
            in_burst[t] = state
            state = (flips[t] >= leave) if state else (flips[t] < enter)
        counts = rng.poisson(np.where(in_burst, burst, calm))
        return _plan(np.repeat(np.arange(horizon), counts))


TRACE_REQUIRED = ("submit_time", "deadline")
TRACE_OPTIONAL = ("model", "duration", "gpus")


@dataclass(frozen=True)
class TraceRow:
    submit_time: float
    deadline: float
    model: str = ""
    duration: float = math.nan
    gpus: float = 1.0


class TraceArrivals:
    """Replay a CSV trace of job submissions, scaled to slots.

    Columns (header row required): ``submit_time`` and ``deadline`` (absolute times in one unit,
    e.g. seconds), and optionally ``model`` (a name, kept as metadata), ``duration`` (run time in the
    same unit on ``gpus`` GPUs) and ``gpus`` (default 1). Times are shifted so the first submission is
    slot 0 and divided by ``slot_seconds`` (default: the trace's span, from the first submission to
    the last deadline, fitted into the horizon). A task's
    need is ``duration x gpus / slot_seconds`` node-slots when ``duration`` is given; otherwise the
    workload's drawn need. The arrival rate and load of the environment are ignored.

    The whole file is read and checked before anything is used: a missing column, or a row with a
    missing or malformed value, raises ``ValueError`` naming the file, row and column.
    """

    name = "trace"

    def __init__(self, path: str | Path, slot_seconds: float | None = None) -> None:
        self.path = Path(path)
        self.rows = read_trace(self.path)
        if slot_seconds is not None and not (isinstance(slot_seconds, (int, float)) and slot_seconds > 0):
            raise ValueError(f"slot_seconds must be a number > 0 or None, got {slot_seconds!r}")
        self.slot_seconds = slot_seconds

    def plan(self, rng: np.random.Generator, rate: float, horizon: int) -> ArrivalPlan:
        start = min(r.submit_time for r in self.rows)
        span = max(r.deadline for r in self.rows) - start
        unit = self.slot_seconds or max(span, 1e-12) / max(horizon - 1, 1)
        rows = sorted(self.rows, key=lambda r: r.submit_time)
        slots = np.array([math.floor((r.submit_time - start) / unit) for r in rows], dtype=np.int64)
        deadlines = np.array([math.floor((r.deadline - start) / unit) for r in rows], dtype=np.int64)
        needs = np.array([r.duration * r.gpus / unit for r in rows])
        keep = slots < horizon
        return ArrivalPlan(slots[keep], np.maximum(deadlines[keep], slots[keep]), needs[keep])


def read_trace(path: Path) -> list[TraceRow]:
    """Parse and check a whole trace CSV (see :class:`TraceArrivals`)."""
    if not path.is_file():
        raise ValueError(f"trace {path} does not exist")
    with path.open(newline="") as fh:
        reader = csv.DictReader(fh)
        columns = [c.strip() for c in (reader.fieldnames or [])]
        missing = [c for c in TRACE_REQUIRED if c not in columns]
        if missing:
            raise ValueError(
                f"trace {path}: missing required column(s) {missing}; required {list(TRACE_REQUIRED)}, "
                f"optional {list(TRACE_OPTIONAL)}, found {columns}"
            )
        rows = [_parse_row(path, n, {k.strip(): v for k, v in raw.items() if k}) for n, raw in enumerate(reader, 2)]
    if not rows:
        raise ValueError(f"trace {path} has a header but no rows")
    return rows


def _number(path: Path, line: int, row: dict, column: str, default: float | None = None) -> float:
    text = (row.get(column) or "").strip()
    if not text:
        if default is not None:
            return default
        raise ValueError(f"trace {path}, row {line}, column '{column}': missing value")
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"trace {path}, row {line}, column '{column}': {text!r} is not a number") from None
    if not math.isfinite(value):
        raise ValueError(f"trace {path}, row {line}, column '{column}': {text!r} is not finite")
    return value


def _parse_row(path: Path, line: int, row: dict) -> TraceRow:
    submit = _number(path, line, row, "submit_time")
    deadline = _number(path, line, row, "deadline")
    if deadline < submit:
        raise ValueError(f"trace {path}, row {line}, column 'deadline': {deadline} is before submit_time {submit}")
    duration = _number(path, line, row, "duration", default=math.nan)
    gpus = _number(path, line, row, "gpus", default=1.0)
    if not math.isnan(duration) and duration <= 0:
        raise ValueError(f"trace {path}, row {line}, column 'duration': must be > 0, got {duration}")
    if gpus <= 0:
        raise ValueError(f"trace {path}, row {line}, column 'gpus': must be > 0, got {gpus}")
    return TraceRow(submit, deadline, (row.get("model") or "").strip(), duration, gpus)


ARRIVALS = {"poisson": PoissonArrivals, "bursty": BurstyArrivals}


def make_arrivals(spec: str | ArrivalProcess) -> ArrivalProcess:
    """``"poisson"``, ``"bursty"``, a path to a ``.csv`` trace, or an arrival process object."""
    if not isinstance(spec, str):
        if not callable(getattr(spec, "plan", None)):
            allowed = f"one of {sorted(ARRIVALS)}, a .csv trace path or a process"
            raise ValueError(f"arrivals must be {allowed}, got {spec!r}")
        return spec
    if spec in ARRIVALS:
        return ARRIVALS[spec]()
    if spec.endswith(".csv"):
        return TraceArrivals(spec)
    raise ValueError(f"arrivals must be one of {sorted(ARRIVALS)} or a path to a .csv trace, got {spec!r}")
