"""Schedulers that misbehave, for the bench tests; importable as ``tests.bench_agents:Class`` by the
bench's worker processes (started from the repository root)."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import numpy as np

from mara_agents.base import ObservationScheduler
from mara_agents.heuristics import EDFScheduler

NODES = 4


class TinyEDF(EDFScheduler):
    """A ``module:Class`` agent: the packaged EDF under another name, so it must give EDF's numbers."""


class _AtSlot3(EDFScheduler):
    """Misbehaves (:meth:`misbehave`) at its first turn of slot 3."""

    def reset(self, seed: int | None = None) -> None:
        super().reset(seed)
        self.turns = 0

    def act(self, observation: dict, agent: str) -> int:
        self.turns += 1
        if self.turns > 3 * NODES:
            self.misbehave()
        return super().act(observation, agent)

    def misbehave(self) -> None:
        raise NotImplementedError


class RaisesAtSlot3(_AtSlot3):
    def misbehave(self) -> None:
        raise RuntimeError("scheduler bug")


class ExitsAtSlot3(_AtSlot3):
    def misbehave(self) -> None:
        sys.exit(3)


class InterruptsAtSlot3(_AtSlot3):
    def misbehave(self) -> None:
        raise KeyboardInterrupt


class EndsProcessAtSlot3(_AtSlot3):
    """``os._exit(0)``: the process ends with a success code and no result."""

    def misbehave(self) -> None:
        os._exit(0)


class CrashesAtSlot3(_AtSlot3):
    """A crash in native code, as a segmentation fault."""

    def misbehave(self) -> None:
        os.kill(os.getpid(), signal.SIGSEGV)


class HangsAtSlot3(_AtSlot3):
    def misbehave(self) -> None:
        while True:
            time.sleep(1.0)


class SaysItsThreads(_AtSlot3):
    """Fails at slot 3 with the thread-count variables its worker process sees, in its message."""

    def misbehave(self) -> None:
        names = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
        raise RuntimeError(" ".join(f"{name}={os.environ.get(name)}" for name in names))


class SlowEDF(EDFScheduler):
    """EDF that takes a while per turn, so that a bench can be interrupted or killed mid-cell.

    About 12 s per 150-slot episode of 4 nodes: long enough that its cells are still running when
    the CPU-bound ``edf`` cells beside it finish on a loaded machine (at 6 s they once were not), and
    short enough that an interrupted bench winds down within the tests' timeouts (at 30 s it did not)."""

    def act(self, observation: dict, agent: str) -> int:
        # With HOLD_FOR_EDF_CELLS set to a bench's cells folder, first wait (up to 60 s) until both
        # edf cells are saved there: on a loaded machine the sleeping cells otherwise finished before
        # the CPU-bound edf cells, and the bench ended before the test's Ctrl-C
        hold = os.environ.get("HOLD_FOR_EDF_CELLS")
        waited = 0.0
        while hold and waited < 60.0 and len(list(Path(hold).glob("edf__*.json"))) < 2:
            time.sleep(0.05)
            waited += 0.05
        time.sleep(0.02)
        return super().act(observation, agent)


def not_a_scheduler() -> object:
    return object()


NOT_CALLABLE = 3


class ShortestForecast(ObservationScheduler):
    """A user's scheduler on the documented base class that ranks by the forecasts (docs/schedulers.md).

    It fails its cell if a forecast it reads is never above zero, i.e. if the bench gave it no forecasts.
    """

    def reset(self, seed: int | None = None) -> None:
        super().reset(seed)
        self.largest = 0.0

    def choose(self, obs, allowed):
        remaining = obs.remaining("p50")
        self.largest = max(self.largest, float(remaining[allowed].max()))
        if obs.globals["time"] > 0.5 and self.largest <= 0.0:
            raise AssertionError("no forecast above zero reached the scheduler")
        return int(allowed[np.argmin(remaining[allowed])])
