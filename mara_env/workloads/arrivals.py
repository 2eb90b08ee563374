"""Arrival processes: when tasks arrive (and, for traces, their deadlines and sizes).

Every process returns an :class:`ArrivalPlan`: one entry per task with its arrival slot, and a
deadline slot and a required work where the process knows them (a trace), ``-1`` / ``nan`` where
the episode generator should draw them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

from mara_env.workloads.plan import ArrivalPlan
from mara_env.workloads.trace import TRACE_COLUMNS, TraceArrivals, parse_trace_columns

__all__ = [
    "ARRIVALS",
    "TRACE_COLUMNS",
    "ArrivalPlan",
    "ArrivalProcess",
    "BurstyArrivals",
    "DiurnalArrivals",
    "PoissonArrivals",
    "TraceArrivals",
    "make_arrivals",
    "parse_trace_columns",
    "uses_load",
]


def _plan(slots: np.ndarray) -> ArrivalPlan:
    return ArrivalPlan(slots, np.full(slots.size, -1, dtype=np.int64), np.full(slots.size, np.nan))


class ArrivalProcess(Protocol):
    """When tasks arrive over ``horizon`` slots at a mean ``rate`` (tasks per slot).

    A process may set ``uses_load = False`` (a trace) when the rate, hence the env's load, does not
    apply to it.
    """

    name: str

    def plan(self, rng: np.random.Generator, rate: float, horizon: int) -> ArrivalPlan: ...


class PoissonArrivals:
    """``Poisson(rate)`` arrivals in every slot, independently."""

    name = "poisson"
    uses_load = True

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
    uses_load = True

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


@dataclass(frozen=True)
class DiurnalArrivals:
    """Poisson arrivals whose rate follows a day: ``rate * (1 + amplitude * sin(2 pi t / period + phase))``.

    The phase is drawn per episode, so an episode may start at any time of day; the mean rate over
    whole periods is ``rate``. Cluster traces show such cycles (busy days, quiet nights).
    """

    period: float = 144.0
    amplitude: float = 0.8
    name: str = "diurnal"
    uses_load = True

    def plan(self, rng: np.random.Generator, rate: float, horizon: int) -> ArrivalPlan:
        phase = rng.uniform(0.0, 2.0 * np.pi)
        t = np.arange(horizon)
        rates = rate * (1.0 + self.amplitude * np.sin(2.0 * np.pi * t / self.period + phase))
        counts = rng.poisson(np.maximum(rates, 0.0))
        return _plan(np.repeat(t, counts))


ARRIVALS = {"poisson": PoissonArrivals, "bursty": BurstyArrivals, "diurnal": DiurnalArrivals}


def uses_load(process: ArrivalProcess) -> bool:
    """Whether the env's ``load`` (through the arrival rate) shapes ``process``'s arrivals."""
    return bool(getattr(process, "uses_load", True))


def make_arrivals(
    spec: str | Path | Mapping | ArrivalProcess,
    columns: Mapping[str, str] | str | None = None,
    slot_seconds: float | None = None,
) -> ArrivalProcess:
    """``"poisson"``, ``"bursty"``, a path to a ``.csv`` trace, a trace mapping, or a process object.

    A trace mapping is ``{"trace": path, "columns": {...}, "slot_seconds": s}`` (plain data, so it
    fits a JSON config). ``columns`` (a mapping, or the CLI form ``"submit_time=submission_time,..."``)
    and ``slot_seconds`` apply to a trace only.
    """
    if isinstance(spec, Mapping):
        unknown = sorted(set(spec) - {"trace", "columns", "slot_seconds"})
        if unknown or "trace" not in spec:
            raise ValueError(
                f"arrivals as a mapping must be {{'trace': path, 'columns': {{...}}, 'slot_seconds': s}} "
                f"(columns and slot_seconds optional), got keys {sorted(spec)}"
            )
        if columns is not None or slot_seconds is not None:
            raise ValueError("give columns and slot_seconds inside the arrivals mapping or as arguments, not both")
        return make_arrivals(spec["trace"], spec.get("columns"), spec.get("slot_seconds"))
    is_path = isinstance(spec, Path) or (isinstance(spec, str) and spec.lower().endswith(".csv"))
    if is_path:
        mapping = parse_trace_columns(columns) if isinstance(columns, str) else columns
        return TraceArrivals(spec, slot_seconds=slot_seconds, columns=mapping)
    if columns is not None or slot_seconds is not None:
        raise ValueError(f"columns and slot_seconds apply to a .csv trace only, got arrivals={spec!r}")
    if not isinstance(spec, str):
        if not callable(getattr(spec, "plan", None)):
            allowed = f"one of {sorted(ARRIVALS)}, a .csv trace path, a trace mapping or a process"
            raise ValueError(f"arrivals must be {allowed}, got {spec!r}")
        return spec
    if spec in ARRIVALS:
        return ARRIVALS[spec]()
    raise ValueError(f"arrivals must be one of {sorted(ARRIVALS)} or a path to a .csv trace, got {spec!r}")
