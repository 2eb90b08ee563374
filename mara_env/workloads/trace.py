"""Replaying a CSV job trace: parsing once, checking everything, and scaling seconds to slots.

A trace is read and checked whole when the :class:`TraceArrivals` is made; each ``plan`` for a
horizon is computed once and cached, so resets of an env replaying a trace cost no parsing.
"""

from __future__ import annotations

import csv
import io
import math
import warnings
from array import array
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from mara_env.workloads.plan import ArrivalPlan

# Our column names; a file may name them differently (``columns=``). Times and durations in seconds.
TRACE_REQUIRED = ("submit_time",)
TRACE_OPTIONAL = ("deadline", "model", "duration", "gpus")
TRACE_COLUMNS = TRACE_REQUIRED + TRACE_OPTIONAL
NUMERIC = ("submit_time", "deadline", "duration", "gpus")
DEFAULTS = {"deadline": math.nan, "duration": math.nan, "gpus": 1.0}
# A need above this many node-slots is refused: no episode supplies it, and curve arithmetic stays exact.
MAX_NEED = 1e15
# Without slot_seconds, a trace fitted into the horizon at more arrivals per slot than this is warned
# about: far beyond any load preset (0.4 to 0.8 per slot on 8 nodes), most of it expires in the queue.
CROWDED_PER_SLOT = 10.0
_SNIFF_BYTES = 8192


def parse_trace_columns(text: str) -> dict[str, str | None]:
    """The CLI form ``submit_time=submission_time,gpus=num_gpu`` as a mapping (ours -> the file's).

    ``deadline=`` (nothing after ``=``) maps an optional column to ``None``: not read.
    """
    mapping: dict[str, str | None] = {}
    for part in (p.strip() for p in str(text).split(",")):
        if not part:
            continue
        ours, sep, theirs = (s.strip() for s in part.partition("="))
        if not sep or not ours:
            raise ValueError(f"trace columns must be OURS=THEIRS pairs separated by commas, got {part!r} in {text!r}")
        if ours in mapping:
            raise ValueError(f"trace columns name {ours!r} twice in {text!r}")
        mapping[ours] = theirs or None
    return check_columns(mapping)


def check_columns(columns: Mapping[str, str | None] | None) -> dict[str, str | None]:
    """Our column name -> the file's, for every column (identity where not mapped).

    An optional column mapped to ``None`` is not read even if the file has a column of that name
    (e.g. a ``deadline`` column meaning something else).
    """
    if columns is None:
        columns = {}
    if not isinstance(columns, Mapping):
        raise ValueError(f"columns must be a mapping of {list(TRACE_COLUMNS)} to the file's names, got {columns!r}")
    unknown = [k for k in columns if k not in TRACE_COLUMNS]
    if unknown:
        raise ValueError(f"columns has unknown key(s) {unknown}; allowed: {list(TRACE_COLUMNS)}")
    bad = {
        k: v
        for k, v in columns.items()
        if not ((isinstance(v, str) and v.strip()) or (v is None and k in TRACE_OPTIONAL))
    }
    if bad:
        raise ValueError(f"columns must map to non-empty column names (None: an optional column not read), got {bad}")
    full = {ours: columns.get(ours, ours) for ours in TRACE_COLUMNS}
    full = {ours: None if name is None else str(name).strip() for ours, name in full.items()}
    used = [name for name in full.values() if name is not None]
    twice = sorted({name for name in used if used.count(name) > 1})
    if twice:
        owners = {name: [ours for ours, n in full.items() if n == name] for name in twice}
        raise ValueError(
            f"columns would read the same file column for several of ours: {owners}; map one of them to "
            "another name, or an optional one to None"
        )
    return full


def open_text(path: Path) -> io.TextIOWrapper:
    """The file opened as UTF-8 text (a byte-order mark skipped), after checking it is a text file.

    ``ValueError`` naming the file for a directory, a missing path or a binary file (a NUL byte in
    its first 8 KiB); bytes that are not UTF-8 further on are caught while reading (:class:`TraceTable`).
    """
    if path.is_dir():
        raise ValueError(f"trace {path} is a directory, not a CSV file")
    if not path.exists():
        raise ValueError(f"trace {path} does not exist")
    try:
        with path.open("rb") as fh:
            head = fh.read(_SNIFF_BYTES)
        if b"\x00" in head:
            raise ValueError(f"trace {path} is a binary file, not a UTF-8 CSV text file")
        return path.open(encoding="utf-8-sig", newline="")  # streamed: the file is never held whole
    except OSError as err:
        raise ValueError(f"trace {path} cannot be read: {err}") from err


def header_indices(path: Path, header: list[str], columns: dict[str, str | None]) -> dict[str, int]:
    """Index of each of our columns in the file's header (absent optional columns left out)."""
    names = [h.strip() for h in header]
    seen: set[str] = set()
    for name in names:
        if name and name in seen:
            raise ValueError(f"trace {path}: column {name!r} appears more than once in the header")
        seen.add(name)
    missing = [f"{ours} (as {columns[ours]!r})" for ours in TRACE_REQUIRED if columns[ours] not in seen]
    if missing:
        raise ValueError(
            f"trace {path}: missing required column(s) {missing}; required {list(TRACE_REQUIRED)}, "
            f"optional {list(TRACE_OPTIONAL)} (map other names with columns=), found {names}"
        )
    return {ours: names.index(theirs) for ours, theirs in columns.items() if theirs is not None and theirs in seen}


class TraceTable:
    """The checked columns of a trace, as arrays in file order (``row`` = line number, header = 1)."""

    def __init__(self, path: Path, columns: Mapping[str, str] | None = None) -> None:
        self.path = path
        self.columns = check_columns(columns)
        with open_text(path) as fh:
            try:
                reader = csv.reader(fh)
                header = next(reader, None)
                if not header:
                    raise ValueError(f"trace {path} is empty: a header row is required")
                self.index = header_indices(path, header, self.columns)
                values, models, rows = self._read_rows(reader)
            except UnicodeDecodeError as err:
                raise ValueError(f"trace {path} is not UTF-8 text ({err.reason}): a CSV trace must be UTF-8") from None
        if not rows:
            raise ValueError(f"trace {path} has a header but no rows")
        self.row = np.frombuffer(rows, dtype=np.int64)
        for name in NUMERIC:
            setattr(self, name, np.frombuffer(values[name], dtype=np.float64))
        self.model_names = list(models)
        self.model = np.frombuffer(self._codes, dtype=np.int32)
        self._check()
        for name in ("row", "model", "gpu_seconds", *NUMERIC):
            getattr(self, name).flags.writeable = False  # tables are shared (read_table)

    # One pass over the rows; a row the fast path cannot take goes through _slow_value, which either
    # fills defaults or raises the precise error. Rows are named by their (last) line in the file.
    def _read_rows(self, reader) -> tuple[dict[str, array], dict[str, int], array]:
        values = {name: array("d") for name in NUMERIC}
        present = [(name, self.index[name], values[name]) for name in NUMERIC if name in self.index]
        absent = [(values[name], DEFAULTS[name]) for name in NUMERIC if name not in self.index]
        model_at = self.index.get("model")
        models: dict[str, int] = {}
        self._codes = array("i")
        rows = array("q")
        for fields in reader:
            if not fields or (len(fields) == 1 and not fields[0].strip()):
                continue  # blank line
            line = reader.line_num
            try:
                parsed = [float(fields[i]) for _, i, _ in present]
                total = sum(parsed)
                if total != total:  # a literal nan somewhere (or inf - inf): let the slow path say which
                    raise ValueError
            except (ValueError, IndexError):
                parsed = [self._slow_value(line, fields, name, i) for name, i, _ in present]
            for (_, _, out), value in zip(present, parsed):
                out.append(value)
            for out, default in absent:
                out.append(default)
            name = fields[model_at].strip() if model_at is not None and model_at < len(fields) else ""
            self._codes.append(models.setdefault(name, len(models)))
            rows.append(line)
        return values, models, rows

    def _slow_value(self, line: int, fields: list[str], name: str, i: int) -> float:
        text = fields[i].strip() if i < len(fields) else ""
        where = f"trace {self.path}, row {line}, column '{self.columns[name]}'"
        if not text:
            if name in DEFAULTS:
                return DEFAULTS[name]
            raise ValueError(f"{where}: missing value")
        try:
            value = float(text)
        except ValueError:
            raise ValueError(f"{where}: {text!r} is not a number") from None
        if math.isnan(value):
            raise ValueError(f"{where}: {text!r} is not a number (leave it empty for the default)")
        return value

    def _fail(self, name: str, bad: np.ndarray, why: str) -> None:
        k = int(np.flatnonzero(bad)[0])
        value = getattr(self, name)[k] if name in NUMERIC else None
        raise ValueError(f"trace {self.path}, row {self.row[k]}, column '{self.columns[name]}': {value} {why}")

    def _check(self) -> None:
        for name in NUMERIC:
            values = getattr(self, name)
            known = ~np.isnan(values) if name in DEFAULTS else np.ones(values.size, dtype=bool)
            bad = known & ~np.isfinite(values)
            if name not in DEFAULTS:
                bad |= np.isnan(values)
            if bad.any():
                self._fail(name, bad, "is not finite (an overflowing number, inf or nan)")
        if (self.submit_time < 0).any():
            self._fail("submit_time", self.submit_time < 0, "must be >= 0 seconds")
        if (self.deadline < self.submit_time).any():  # nan (no deadline) compares False
            self._fail("deadline", self.deadline < self.submit_time, "is before the row's submit_time")
        if (self.duration <= 0).any():
            self._fail("duration", self.duration <= 0, "must be > 0 seconds")
        if (self.gpus <= 0).any():
            self._fail("gpus", self.gpus <= 0, "must be > 0")
        with np.errstate(over="ignore"):
            gpu_seconds = self.duration * self.gpus
        if np.isinf(gpu_seconds).any():
            self._fail("duration", np.isinf(gpu_seconds), "x gpus overflows")
        self.gpu_seconds = gpu_seconds

    def __len__(self) -> int:
        return self.row.size


_TABLES: OrderedDict[tuple, TraceTable] = OrderedDict()
_TABLES_KEPT = 4


def read_table(path: Path, columns: Mapping[str, str] | None = None) -> TraceTable:
    """The parsed table of ``path``, shared by every process object of this file in this process.

    Keyed by the file's resolved path, size and modification time and the column mapping, so an
    edited file is read again; the last few tables are kept (a bench's worker makes many envs).
    """
    mapping = check_columns(columns)
    try:
        stat = path.stat()
        key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns, tuple(sorted(mapping.items())))
    except OSError:
        return TraceTable(path, mapping)  # missing or unreadable: let the table name the problem
    if key in _TABLES:
        _TABLES.move_to_end(key)
        return _TABLES[key]
    table = TraceTable(path, mapping)
    _TABLES[key] = table
    while len(_TABLES) > _TABLES_KEPT:
        _TABLES.popitem(last=False)
    return table


class TraceArrivals:
    """Replay a CSV trace of job submissions, scaled to slots.

    Columns (header row required; our names, or the file's through ``columns``): ``submit_time``
    (seconds, >= 0) and, optionally, ``deadline`` (absolute, seconds; drawn by the deadline model
    where absent or empty), ``model`` (a name, metadata), ``duration`` (run time in seconds on
    ``gpus`` GPUs; the workload's drawn need where absent or empty) and ``gpus`` (default 1).

    Parameters
    ----------
    path:
        The CSV file (UTF-8; a byte-order mark is fine).
    slot_seconds:
        Seconds per slot. ``None``: the trace's span (first submission to last deadline, or last
        submission plus duration) fitted into the horizon.
    columns:
        Our column name -> the file's, e.g. ``{"submit_time": "submission_time", "gpus": "num_gpu"}``.

    The file is parsed once per process (:func:`read_table`); each horizon's plan is computed once.
    Times are shifted so the first submission is slot 0. A task's need is
    ``duration x gpus / slot_seconds`` node-slots. An episode draws its tasks' bodies slot by slot,
    when the slot begins (:class:`~mara_env.workloads.base.LazyEpisode`), so a reset costs the plan and
    the first slot only. Rows submitted at or after the horizon, or due at or after it, are not
    played: their number is :attr:`rows_dropped` (of the latest episode) and a warning says so once.
    Rows without a deadline get a drawn one when their slot begins, so those among them due past the
    horizon are added to :attr:`rows_dropped` then: the episode's count is final once it has played
    its last slot. Without ``slot_seconds``, a trace fitted into the horizon at more than
    :data:`CROWDED_PER_SLOT` rows per slot is warned about once. The env's ``load`` does not apply
    (``uses_load`` is False).

    The whole file is read and checked when the object is made: a missing column, a duplicated
    header column, or a row with a missing, malformed or overflowing value raises ``ValueError``
    naming the file, row and column.
    """

    name = "trace"
    uses_load = False
    lazy_bodies = True  # generate_episode makes a LazyEpisode

    def __init__(
        self, path: str | Path, slot_seconds: float | None = None, columns: Mapping[str, str] | None = None
    ) -> None:
        if slot_seconds is not None:
            ok = isinstance(slot_seconds, (int, float, np.integer, np.floating)) and not isinstance(slot_seconds, bool)
            if not (ok and math.isfinite(slot_seconds) and slot_seconds > 0):
                raise ValueError(f"slot_seconds must be a finite number > 0 or None, got {slot_seconds!r}")
            slot_seconds = float(slot_seconds)
        self.path = Path(path)
        self.slot_seconds = slot_seconds
        self.table = read_table(self.path, columns)
        self.rows_dropped = 0
        self._plans: dict[int, tuple[ArrivalPlan, np.ndarray]] = {}
        self._warned = False

    def __len__(self) -> int:
        return len(self.table)

    def unit(self, horizon: int) -> float:
        """Seconds per slot for ``horizon`` slots."""
        if self.slot_seconds is not None:
            return self.slot_seconds
        t = self.table
        ends = np.fmax(t.deadline, t.submit_time + np.nan_to_num(t.duration, nan=0.0))
        span = float(np.max(ends) - np.min(t.submit_time))
        return span / max(horizon - 1, 1) if span > 0 else 1.0  # a zero span (one instant): 1 s slots

    def plan(self, rng: np.random.Generator, rate: float, horizon: int) -> ArrivalPlan:
        if horizon not in self._plans:
            self._plans[horizon] = self._make_plan(horizon)
        plan = self._plans[horizon][0]
        self.rows_dropped = plan.dropped
        return plan

    def source_rows(self, horizon: int) -> np.ndarray:
        """File row (line number) of each task of ``plan(..., horizon)``, in plan order (a task of a
        trace episode has its place in this order as its id)."""
        self.plan(np.random.default_rng(0), 0.0, horizon)
        return self._plans[horizon][1]

    def record_dropped(self, dropped: int, horizon: int, final: bool = True) -> None:
        """Set :attr:`rows_dropped` for the latest episode and warn the first time rows are dropped.

        The episode generator calls it with the plan's drops plus the rows whose drawn deadline fell
        past the horizon, found so far; ``final`` is False while rows without a deadline remain to be
        drawn (their slots have not begun)."""
        self.rows_dropped = int(dropped)
        if dropped and not self._warned:
            self._warned = True
            more = "" if final else " (so far: rows without a deadline are counted when their slot begins)"
            warnings.warn(
                f"trace {self.path}: {dropped} of {len(self)} rows are submitted or due at or after the "
                f"horizon ({horizon} slots of {self.unit(horizon):g} s) and are not played{more}",
                stacklevel=3,
            )

    def _warn_crowded(self, horizon: int, played: int) -> None:
        if self.slot_seconds is None and played > CROWDED_PER_SLOT * horizon:
            warnings.warn(
                f"trace {self.path}: no slot_seconds given, so all of it is fitted into the horizon: "
                f"{horizon} slots of {self.unit(horizon):g} s, {played / horizon:,.0f} arrivals per slot on "
                "average; give slot_seconds to replay a part of the trace at a finer grain",
                stacklevel=4,
            )

    def _make_plan(self, horizon: int) -> tuple[ArrivalPlan, np.ndarray]:
        t, unit = self.table, self.unit(horizon)
        order = np.argsort(t.submit_time, kind="stable")
        start = float(t.submit_time[order[0]])
        with np.errstate(over="ignore"):
            slots = np.floor((t.submit_time[order] - start) / unit)
            deadlines = np.floor((t.deadline[order] - start) / unit)  # nan: drawn later
            needs = t.gpu_seconds[order] / unit
        keep = (slots < horizon) & ~(deadlines >= horizon)
        order, slots, deadlines, needs = order[keep], slots[keep], deadlines[keep], needs[keep]
        self._check_needs(order, needs)
        deadlines = np.where(np.isnan(deadlines), -1, deadlines)
        plan = ArrivalPlan(slots.astype(np.int64), deadlines.astype(np.int64), needs, int(len(t) - order.size))
        for values in plan[:3]:
            values.flags.writeable = False  # cached and shared by every reset
        self._warn_crowded(horizon, order.size)
        return plan, t.row[order]

    def _check_needs(self, order: np.ndarray, needs: np.ndarray) -> None:
        bad = ~np.isnan(needs) & ~((needs > 0) & (needs <= MAX_NEED))
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"trace {self.path}, row {self.table.row[order[k]]}, column '{self.table.columns['duration']}': "
                f"the need duration x gpus / slot_seconds = {needs[k]:g} node-slots is outside (0, {MAX_NEED:g}]"
            )
