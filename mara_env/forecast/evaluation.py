"""Forecast benchmark: remaining-work error of every forecaster on the test curves of each workload.

A case is a task drawn from a workload's ``test`` split, observed as it would be in the env: one
point per slot, each slot adding a per-task constant amount of work drawn from ``U(0.5, 2.0)``
(one to two nodes), until the prefix reaches the given fraction of the task's need. The truth is
the need minus the work done.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from mara_env.forecast import make
from mara_env.forecast.base import History
from mara_env.workloads import Workload, make_workload


def make_cases(
    workload: str | Workload, prefix: float | tuple[float, float], count: int, seed: int, split: str = "test"
) -> tuple[list[History], np.ndarray, np.ndarray]:
    """``count`` (history, target, true remaining work) cases at ``prefix`` of the need, drawn from
    ``split`` of the named workload (or from a workload object). A ``(low, high)`` prefix draws each
    case's fraction log-uniformly between the two (the quantile head's training cases)."""
    spread = isinstance(prefix, tuple)
    rng = np.random.default_rng([seed, 999_999 if spread else int(prefix * 1000)])
    source = make_workload(workload, split) if isinstance(workload, str) else workload
    draws = source.sample_tasks(rng, count)
    histories, targets, truth = [], [], []
    for draw in draws:
        need = draw.curve.work_to_reach(draw.target)
        per_slot = rng.uniform(0.5, 2.0)
        fraction = float(np.exp(rng.uniform(*np.log(prefix)))) if spread else prefix
        seen = fraction * need
        work = np.arange(1, int(seen / per_slot) + 1) * per_slot
        if work.size < 2:
            work = np.array([seen / 2.0, seen])
        work = np.concatenate([[0.0], work])
        histories.append((work, np.array([draw.curve.loss_at(w) for w in work])))
        targets.append(draw.target)
        truth.append(need - work[-1])
    return histories, np.asarray(targets), np.asarray(truth)


def crps_from_samples(samples: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """Continuous ranked probability score per task, ``E|X - y| - E|X - X'| / 2``, from samples."""
    x = np.sort(samples, axis=1)
    s = x.shape[1]
    spread = (x * (2.0 * np.arange(1, s + 1) - s - 1)).sum(axis=1) / (s * s)  # E|X - X'| / 2
    return np.abs(x - truth[:, None]).mean(axis=1) - spread


def score(forecaster_name, histories: list[History], targets: np.ndarray, truth: np.ndarray) -> dict:
    """The metrics of one forecaster (a registered name or an object with ``predict``) on one set of cases."""
    forecaster = make(forecaster_name) if isinstance(forecaster_name, str) else forecaster_name
    start = time.perf_counter()
    if getattr(forecaster, "needs_truth", False):
        forecast = forecaster.predict(histories, targets, truth=truth)
    else:
        forecast = forecaster.predict(histories, targets)
    seconds = (time.perf_counter() - start) / len(histories)
    p10, p50, p90 = forecast.remaining.T
    return {
        "median_abs_log_ratio": float(np.median(np.abs(np.log(np.maximum(p50, 1e-3) / truth)))),
        "median_log_bias": float(np.median(np.log(np.maximum(p50, 1e-3) / truth))),
        "mape": float(np.mean(np.abs(p50 - truth) / truth)),
        "coverage": float(np.mean((p10 <= truth) & (truth <= p90))),
        "crps": float(np.mean(crps_from_samples(forecast.samples, truth))) if forecast.samples is not None else None,
        "known": float(np.mean(forecast.known)),
        "seconds_per_task": seconds,
    }


def benchmark(
    workloads: Sequence[str],
    forecasters: Sequence[str],
    prefixes: Sequence[float] = (0.1, 0.25, 0.5),
    tasks: int = 300,
    seed: int = 0,
) -> list[dict]:
    """One row per (workload, forecaster, prefix) with the keys of the ``--json`` output."""
    rows = []
    for workload in workloads:
        for prefix in prefixes:
            histories, targets, truth = make_cases(workload, prefix, tasks, seed)
            for name in forecasters:
                rows.append(
                    {
                        "workload": workload,
                        "forecaster": name,
                        "prefix": prefix,
                        **score(name, histories, targets, truth),
                    }
                )
    return rows


def format_rows(rows: Sequence[dict]) -> str:
    """A markdown table of the benchmark rows."""
    lines = [
        "| workload | prefix | forecaster | median abs log ratio | MAPE | p10-p90 coverage | CRPS | ms per task |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        crps = "—" if r["crps"] is None else f"{r['crps']:.2f}"
        lines.append(
            f"| {r['workload']} | {r['prefix']:.0%} | {r['forecaster']} | {r['median_abs_log_ratio']:.3f} | "
            f"{r['mape']:.2f} | {r['coverage']:.2f} | {crps} | {1e3 * r['seconds_per_task']:.3f} |"
        )
    return "\n".join(lines)


def write_report(out: Path, markdown: str, records: object) -> None:
    """Print ``markdown`` and write it to ``OUT.md``, with ``records`` as JSON in ``OUT.json``
    (what every forecast benchmark script leaves behind)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(records, indent=1))
    out.with_suffix(".md").write_text(markdown + "\n")
    print(markdown)
