"""Cells: one agent on one workload at one load over the seeds; their keys, results and saved files."""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from mara_env.workloads import LOAD_PRESETS

# What every saved record carries (besides the env's metrics); a saved cell without them is recomputed.
RECORD_KEYS = ("agent", "workload", "load", "seed", "completion_rate")


@dataclass(frozen=True)
class Cell:
    """One agent on one workload at one load, over ``seeds``; picklable, so any backend can run it."""

    agent: str
    workload: str
    load: str
    seeds: tuple[int, ...]
    env_kwargs: dict = field(hash=False)
    search_path: str = field(default="", compare=False)

    def spec(self) -> dict:
        """What the results depend on (not where the agent's module was found)."""
        return {
            "agent": self.agent,
            "workload": self.workload,
            "load": self.load,
            "seeds": list(self.seeds),
            "env": self.env_kwargs,
        }

    @property
    def key(self) -> str:
        """A digest of :meth:`spec`: a saved cell is reused only by a run that asks for the same."""
        return hashlib.sha256(json.dumps(self.spec(), sort_keys=True).encode()).hexdigest()[:12]

    @property
    def file_name(self) -> str:
        """``<agent>__<workload>__<load>__<key>.json`` with unsafe characters as ``_`` (and cut short)."""
        safe = [re.sub(r"[^A-Za-z0-9_.-]", "_", part)[:60] for part in (self.agent, self.workload, self.load)]
        return "__".join([*safe, self.key]) + ".json"

    def where(self) -> str:
        """``agent 'a', workload 'w', load 'l'`` for messages."""
        return f"agent {self.agent!r}, workload {self.workload!r}, load {self.load!r}"

    def labels(self) -> dict:
        """The labels every record of the cell starts with."""
        return {"agent": self.agent, "workload": self.workload, "load": self.load}


def load_value(label: str) -> str | float:
    """What ``raw_env(load=...)`` takes for a load label: the preset name, or the number."""
    if label in LOAD_PRESETS:
        return label
    try:
        return float(label)
    except ValueError:
        return label


def cell_env(env_kwargs: Mapping, workload: str, load: str) -> dict:
    """``raw_env`` keywords of one cell: the shared ones (bookkeeping keys dropped), workload and load."""
    kwargs = {k: v for k, v in env_kwargs.items() if not k.endswith("_sha256")}
    return {**kwargs, "workload": workload, "load": load_value(load)}


def error_record(
    cell: Cell, message: str, seed: int | None = None, slot: int | None = None, node: str | None = None, **extra
) -> dict:
    """The ``error`` of a failed cell; ``message`` starts with where (agent, workload, load, seed, slot, node)."""
    where = cell.where()
    if seed is not None:
        where += f", seed {seed}, slot {slot}" + (f", {node}" if node is not None else "")
    record = {"message": f"{where}: {message}", "seed": seed, "slot": slot, "node": node, "traceback": ""}
    return {**record, **extra}


def failed_cell(cell: Cell, error: dict, wall_seconds: float = 0.0) -> dict:
    """A cell result without records; ``error`` (see :func:`error_record`) says why."""
    return {"cell": cell.spec(), "key": cell.key, "records": [], "wall_seconds": wall_seconds, "error": error}


def cell_path(out: Path, cell: Cell) -> Path:
    return out / "cells" / cell.file_name


def read_cell(out: Path, cell: Cell) -> dict | None:
    """The saved result of ``cell``, or ``None`` when missing, unreadable, invalid or of another config.

    Valid means: a JSON object with this cell's ``key`` and ``spec``, no error, and one record per
    seed, in order, each an object with the labels of the cell and a numeric completion rate.
    """
    try:
        saved = json.loads(cell_path(out, cell).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return saved if valid_cell(saved, cell) else None


def valid_cell(saved: object, cell: Cell) -> bool:
    """Whether ``saved`` is a finished result of ``cell`` (see :func:`read_cell`)."""
    if not isinstance(saved, dict) or saved.get("error") is not None:
        return False
    if saved.get("key") != cell.key or saved.get("cell") != cell.spec():
        return False
    records, wall = saved.get("records"), saved.get("wall_seconds")
    if not isinstance(records, list) or len(records) != len(cell.seeds) or not _is_number(wall):
        return False
    labels = cell.labels()
    for seed, record in zip(cell.seeds, records):
        if not isinstance(record, dict) or any(k not in record for k in RECORD_KEYS):
            return False
        if record["seed"] != seed or any(record[k] != v for k, v in labels.items()):
            return False
        if not _is_number(record["completion_rate"]):
            return False
    return True


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and not math.isinf(value)
