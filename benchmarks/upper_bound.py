"""Time of the LP ceiling on completions (mara_env.core.upper_bound) on the largest settings.

    python benchmarks/upper_bound.py --seeds 10 --big-trace runs/trace_parse/trace_1000000.csv
    python benchmarks/upper_bound.py --presets --seeds 20
    python benchmarks/upper_bound.py --table-limit --seeds 5

``--table-limit`` plays the oracle heuristic on ``synthetic`` at each load preset with the default
16-row table and with 64 rows, beside the ceiling (the LP has no table limit).
``--presets`` instead prints the ceiling's completion rate (mean and 95% CI over seeds 0..N-1) for
every workload x load preset in the setting of docs/baselines.md (8 nodes, 16 rows, 300 slots,
Poisson arrivals, test-split curves), to set beside the schedulers' table.

Per setting: tasks per episode, the ceiling (completions and share of tasks) and the time to
compute it with each exact solver (the default greedy, and HiGHS through scipy), mean and max over
seeds, with the largest difference between the two. ``--big-trace`` adds a large trace
(benchmarks/trace_parse.py writes one) replayed at 60 s and 600 s slots on 32 nodes.
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

import numpy as np

import mara_env
from mara_env.core.upper_bound import env_upper_bound

TRACE = Path(__file__).resolve().parents[1] / "examples" / "traces" / "example_trace.csv"
BIG_COLUMNS = {"submit_time": "submission_time", "model": "model_name", "duration": "run_seconds", "gpus": "num_gpu"}


def settings(big_trace: Path | None) -> list[tuple[str, dict]]:
    out = [(f"{w}, extreme, 8 nodes", {"workload": w, "load": "extreme"}) for w in ("synthetic", "vision", "rl")]
    out.append(("synthetic, extreme, 32 nodes", {"load": "extreme", "num_nodes": 32, "max_tasks": 64}))
    out.append(("example trace, 32 nodes", {"arrivals": str(TRACE), "num_nodes": 32}))
    if big_trace is not None:
        for slot in (60.0, 600.0):
            arrivals = {"trace": str(big_trace), "columns": BIG_COLUMNS, "slot_seconds": slot}
            out.append((f"{big_trace.name} at {slot:g} s slots, 32 nodes", {"arrivals": arrivals, "num_nodes": 32}))
    return out


def measure(env_kwargs: dict, seeds: int, highs_max_tasks: int) -> dict:
    env = mara_env.raw_env(forecaster="none", horizon=300, **env_kwargs)
    tasks, bounds, differences = [], [], []
    seconds: dict[str, list[float]] = {"greedy": [], "highs": []}
    for seed in range(seeds):
        env.reset(seed=seed)
        found = {}
        for method in seconds:
            if method == "highs" and found["greedy"].tasks > highs_max_tasks:  # the greedy runs first
                continue
            start = time.perf_counter()
            found[method] = env_upper_bound(env, method)
            seconds[method].append(time.perf_counter() - start)
        tasks.append(found["greedy"].tasks)
        bounds.append(found["greedy"].completions)
        if "highs" in found:
            differences.append(abs(found["greedy"].completions - found["highs"].completions))
    result = {
        "tasks_mean": float(np.mean(tasks)),
        "ceiling_mean": float(np.mean(bounds)),
        "ceiling_share": float(np.sum(bounds) / max(np.sum(tasks), 1)),
        "max_difference": float(np.max(differences)) if differences else float("nan"),
    }
    for method, values in seconds.items():
        result[f"{method}_seconds_mean"] = float(np.mean(values)) if values else float("nan")
        result[f"{method}_seconds_max"] = float(np.max(values)) if values else float("nan")
    return result


def presets(seeds: int) -> dict:
    from mara_env.workloads import LOAD_PRESETS

    table = {}
    for workload in ("synthetic", "vision", "rl", "mixed"):  # the workloads of docs/baselines.md's table
        for load in LOAD_PRESETS:
            try:
                env = mara_env.raw_env(forecaster="none", workload=workload, load=load, curve_split="test")
            except ValueError as err:  # a bank not installed here
                print(f"| {workload} | {load} | skipped: {err} |", flush=True)
                continue
            rates = []
            for seed in range(seeds):
                env.reset(seed=seed)
                rates.append(env_upper_bound(env).rate)
            half = 1.96 * float(np.std(rates, ddof=1)) / np.sqrt(len(rates)) if len(rates) > 1 else 0.0
            table[f"{workload}/{load}"] = {"mean": float(np.mean(rates)), "ci95": half}
            print(f"| {workload} | {load} | {np.mean(rates):.3f} ± {half:.3f} |", flush=True)
    return table


def table_limit(seeds: int) -> dict:
    """The oracle heuristic with the default 16-row table and with 64 rows, beside the ceiling."""
    import mara_agents

    out = {}
    for load in ("train", "heavy", "extreme"):
        for rows in (16, 64):
            records = mara_agents.evaluate("oracle", range(seeds), load=load, max_tasks=rows)
            rate = float(np.mean([r["completion_rate"] for r in records]))
            ceiling = float(np.mean([r["upper_bound"] / max(r["arrived"], 1) for r in records]))
            out[f"{load}/{rows}"] = {"oracle": rate, "ceiling": ceiling}
            print(f"| {load} | {rows} | {rate:.3f} | {ceiling:.3f} |", flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--big-trace", type=Path, default=None)
    parser.add_argument("--presets", action="store_true", help="ceiling rate per workload x load preset")
    parser.add_argument("--table-limit", action="store_true", help="oracle with 16 and 64 table rows vs the ceiling")
    parser.add_argument("--highs-max-tasks", type=int, default=2000, help="skip HiGHS on bigger episodes (slow)")
    parser.add_argument("--out", type=Path, default=Path("runs/upper_bound/results.json"))
    args = parser.parse_args()
    env_upper_bound  # noqa: B018 (imported up front so scipy's import is not timed below)
    from scipy.optimize import linprog  # noqa: F401

    if args.table_limit:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.with_name("table_limit.json").write_text(json.dumps(table_limit(args.seeds), indent=2))
        return
    if args.presets:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.with_name("presets.json").write_text(json.dumps(presets(args.seeds), indent=2))
        return
    results = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # rows past the horizon of a big trace
        for label, env_kwargs in settings(args.big_trace):
            results[label] = measure(env_kwargs, args.seeds, args.highs_max_tasks)
            r = results[label]
            print(
                f"{label:<48} tasks {r['tasks_mean']:7.1f}  ceiling {r['ceiling_mean']:7.1f} "
                f"({r['ceiling_share']:.3f})  greedy {r['greedy_seconds_mean']:.3f} s mean "
                f"{r['greedy_seconds_max']:.3f} max; highs {r['highs_seconds_mean']:.3f} mean "
                f"{r['highs_seconds_max']:.3f} max; |diff| <= {r['max_difference']:.1e}",
                flush=True,
            )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
