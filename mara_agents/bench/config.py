"""What a bench runs: the grid (:class:`BenchConfig`), its env settings, loads and agents, checked."""

from __future__ import annotations

import hashlib
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

from mara_agents.bench.cells import Cell, cell_env, load_value
from mara_agents.registry import check_spec, shipped_checkpoint, split_spec
from mara_env.config import DEFAULTS as ENV_DEFAULTS
from mara_env.env import raw_env
from mara_env.workloads import LOAD_PRESETS, WORKLOADS, resolve_load

EVAL_CURVE_SPLIT = "test"  # benches measure on curves no forecaster or policy was fitted on
ARRIVAL_PROCESSES = ("poisson", "bursty")


@dataclass(frozen=True)
class BenchConfig:
    """The grid to run: every agent on every workload at every load, over the same seeds.

    Parameters
    ----------
    agents:
        Agent specs: registered names (``mara_agents.SCHEDULERS``), ``NAME:CHECKPOINT`` (e.g.
        ``mara:runs/mara/checkpoint.pt``) or ``module:attr`` import paths, where ``attr`` is a class
        or function that returns a scheduler when called with no arguments.
    workloads:
        Workload names (``mara_env.workloads.WORKLOADS``).
    loads:
        Load presets (``mara_env.workloads.LOAD_PRESETS``) or offered loads as numbers > 0. With a
        trace (``arrivals``) the load does not shape arrivals: give one.
    seeds:
        Episodes per cell, >= 1.
    seed_start:
        First seed; a cell plays seeds ``seed_start .. seed_start + seeds - 1``.
    num_nodes, max_tasks, horizon, switch_cost, curve_split, faults:
        Env settings (``mara_env.raw_env``), the same in every cell; ``curve_split`` defaults to ``test``.
    arrivals, trace_columns, slot_seconds:
        ``poisson``, ``bursty`` or a path to a ``.csv`` trace; for a trace, the mapping of the env's
        column names to the file's (``"submit_time=submission_time,gpus=num_gpu"`` or a dict) and the
        slot length in seconds.
    reference:
        The agent that ``summary.json``/``summary.csv`` compare every other agent with, paired by
        seed (default: the first agent).
    """

    agents: tuple[str, ...]
    workloads: tuple[str, ...] = (ENV_DEFAULTS.workload,)
    loads: tuple[str, ...] = tuple(LOAD_PRESETS)
    seeds: int = 20
    seed_start: int = 0
    num_nodes: int = ENV_DEFAULTS.num_nodes
    max_tasks: int = ENV_DEFAULTS.max_tasks
    horizon: int = ENV_DEFAULTS.horizon
    switch_cost: float = ENV_DEFAULTS.switch_cost
    curve_split: str = EVAL_CURVE_SPLIT
    arrivals: str = ENV_DEFAULTS.arrivals
    trace_columns: str | dict | None = None
    slot_seconds: float | None = None
    faults: dict | None = field(default=None, hash=False)
    reference: str | None = None

    def __post_init__(self) -> None:
        for name in ("agents", "workloads", "loads"):  # lists and numeric loads welcome: stored as text
            values = getattr(self, name)
            values = (values,) if isinstance(values, str) else values
            object.__setattr__(self, name, tuple(str(v) for v in values))
        if isinstance(self.arrivals, Path):
            object.__setattr__(self, "arrivals", str(self.arrivals))
        if self.reference is None and self.agents:
            object.__setattr__(self, "reference", self.agents[0])

    @property
    def seed_list(self) -> list[int]:
        """The episode seeds of every cell."""
        return list(range(self.seed_start, self.seed_start + self.seeds))

    @property
    def is_trace(self) -> bool:
        """Whether arrivals replay a ``.csv`` trace (then the load does not apply)."""
        return self.arrivals not in ARRIVAL_PROCESSES

    def env_kwargs(self) -> dict:
        """The ``raw_env`` keywords shared by every cell (the workload and load are per cell).

        Plain data (JSON, picklable). Settings at their default are left out, so that cells saved
        before a setting existed keep their key.
        """
        kwargs = {"num_nodes": self.num_nodes, "max_tasks": self.max_tasks, "horizon": self.horizon}
        if self.switch_cost != ENV_DEFAULTS.switch_cost:
            kwargs["switch_cost"] = self.switch_cost
        if self.curve_split != EVAL_CURVE_SPLIT:
            kwargs["curve_split"] = self.curve_split
        if self.faults is not None:
            kwargs["faults"] = dict(self.faults)
        if self.is_trace:
            trace = {"trace": self.arrivals}
            if self.trace_columns is not None:
                trace["columns"] = self.trace_columns
            if self.slot_seconds is not None:
                trace["slot_seconds"] = self.slot_seconds
            kwargs["arrivals"] = trace
        elif self.arrivals != ENV_DEFAULTS.arrivals:
            kwargs["arrivals"] = self.arrivals
        return kwargs

    def validate(self) -> None:
        """``ValueError`` naming the first bad value and what is allowed, before any work.

        Agents are checked by name (an unknown name gets the closest registered one) and import
        paths by whether their module can be found; building them is left to the workers.
        """
        for name in ("seeds", "num_nodes", "max_tasks", "horizon"):
            _require_int(name, getattr(self, name), 1)
        _require_int("seed_start", self.seed_start, 0)
        for name in ("agents", "workloads", "loads"):
            values = getattr(self, name)
            if not values or len(set(values)) != len(values):
                raise ValueError(f"{name} must be a non-empty list without repeats, got {list(values)}")
        for workload in self.workloads:
            if workload not in WORKLOADS:
                raise ValueError(f"unknown workload {workload!r}: workloads must be among {sorted(WORKLOADS)}")
        for load in self.loads:
            offered_load(load)
        if self.is_trace and len(self.loads) != 1:
            raise ValueError(
                f"loads do not apply to a trace (arrivals={self.arrivals!r}): give one load, got {list(self.loads)}"
            )
        if not self.is_trace and (self.trace_columns is not None or self.slot_seconds is not None):
            raise ValueError(
                f"trace_columns and slot_seconds apply to a .csv trace only, got arrivals={self.arrivals!r}"
            )
        if self.reference not in self.agents:
            raise ValueError(f"reference must be one of the agents {list(self.agents)}, got {self.reference!r}")
        for agent in self.agents:  # module:Class paths import from the working directory, as in the workers
            check_spec(agent, os.getcwd())
        for workload in self.workloads:  # the env's own checks: sizes, faults, a trace, a missing curve bank
            raw_env(**cell_env(self.env_kwargs(), workload, self.loads[0]), forecaster="none")

    def cells(self, search_path: str = "") -> list[Cell]:
        """The grid in order: agent, then workload, then load."""
        env = self.env_kwargs()
        if self.is_trace:  # a cell is reused only with the same trace contents
            env = {**env, "trace_sha256": file_digest(self.arrivals)}
        cells = []
        for agent in self.agents:
            kind, name, checkpoint = split_spec(agent)
            # ... and with the same checkpoint contents, wherever it lives (shipped weights included)
            weights = checkpoint if kind == "checkpoint" else shipped_checkpoint(name) if kind == "name" else None
            agent_env = {**env, "checkpoint_sha256": file_digest(weights)} if weights else env
            for workload in self.workloads:
                for load in self.loads:
                    cells.append(Cell(agent, workload, load, tuple(self.seed_list), agent_env, search_path))
        return cells


def _require_int(name: str, value: object, low: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")


def file_digest(path: str) -> str:
    """SHA-256 of a file's bytes (``ValueError`` naming it if it cannot be read)."""
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError as err:
        raise ValueError(f"cannot read {path!r}: {err.strerror or err}") from None


def offered_load(label: str) -> float:
    """The offered load of a preset name or a number given as text; ``ValueError`` otherwise."""
    try:
        value = resolve_load(load_value(label))
        if not math.isfinite(value):
            raise ValueError
        return value
    except (ValueError, TypeError, OverflowError):
        raise ValueError(
            f"unknown load {label!r}: loads must be presets among {sorted(LOAD_PRESETS)} or numbers > 0"
        ) from None
