"""``summary.json``/``summary.csv``: per cell, means and 95% CIs, and differences paired by seed."""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path

from mara_agents.bench.config import BenchConfig
from mara_agents.bench.files import write_json, write_text
from mara_agents.stats import paired_difference, summarize

SUMMARY_METRICS = ("completion_rate", "completed", "arrived", "wasted_work", "utilisation", "switches_per_task")


def summary_rows(config: BenchConfig, done: list[dict]) -> list[dict]:
    """One row per finished cell, in grid order.

    Each row: ``agent``, ``workload``, ``load``, ``seeds`` (n), ``reference``, and per metric of
    :data:`SUMMARY_METRICS` ``{"mean", "ci95", "n"}``; for every agent but the reference also
    ``diff`` per metric: the agent minus the reference, per seed, with the 95% t-interval of the mean
    difference (``None`` where the reference's cell failed).
    """
    by_cell = {(c["cell"]["agent"], c["cell"]["workload"], c["cell"]["load"]): c["records"] for c in done}
    rows = []
    for (agent, workload, load), records in by_cell.items():
        stats = summarize(records)
        row = {"agent": agent, "workload": workload, "load": load, "seeds": len(records)}
        row["reference"] = config.reference
        row.update({m: stats[m] for m in SUMMARY_METRICS if m in stats})
        reference = by_cell.get((config.reference, workload, load))
        if agent != config.reference:
            row["diff"] = _differences(records, reference)
        rows.append(row)
    order = {a: i for i, a in enumerate(config.agents)}
    return sorted(
        rows, key=lambda r: (order[r["agent"]], config.workloads.index(r["workload"]), config.loads.index(r["load"]))
    )


def _differences(records: list[dict], reference: list[dict] | None) -> dict | None:
    if reference is None:
        return None
    theirs = {r["seed"]: r for r in reference}
    paired = [(r, theirs[r["seed"]]) for r in records if r["seed"] in theirs]
    diffs = {}
    for metric in SUMMARY_METRICS:
        pairs = [(a[metric], b[metric]) for a, b in paired if metric in a and metric in b]
        if pairs:
            diffs[metric] = paired_difference([a for a, _ in pairs], [b for _, b in pairs])
    return diffs


def write_summary(out: Path, rows: list[dict]) -> list[Path]:
    """Write ``summary.json`` (the rows) and ``summary.csv`` (flattened: ``metric_mean``, ``metric_ci95``,
    ``metric_diff_mean``, ``metric_diff_ci95``; empty where not defined)."""
    write_json(out / "summary.json", _json_safe(rows))
    columns = ["agent", "workload", "load", "seeds", "reference"]
    for metric in SUMMARY_METRICS:
        columns += [f"{metric}_mean", f"{metric}_ci95", f"{metric}_diff_mean", f"{metric}_diff_ci95"]
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        flat = {k: row[k] for k in columns[:5]}
        for metric in SUMMARY_METRICS:
            diff = (row.get("diff") or {}).get(metric)
            for suffix, stat in (("", row.get(metric)), ("_diff", diff)):
                for part in ("mean", "ci95"):
                    value = None if stat is None else stat[part]
                    flat[f"{metric}{suffix}_{part}"] = "" if value is None or not math.isfinite(value) else value
        writer.writerow(flat)
    write_text(out / "summary.csv", buffer.getvalue())
    return [out / "summary.json", out / "summary.csv"]


def _json_safe(value: object) -> object:
    """``nan`` (one seed: no interval) as ``null``, so the file is strict JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_safe(v) for v in value]
    return value
