"""Time and peak memory of the LP ceiling (env_upper_bound) on a long replayed trace.

    python benchmarks/trace_parse.py --rows 1000000 --out runs/trace_parse   # writes the trace
    python benchmarks/ceiling_memory.py --trace runs/trace_parse/trace_1000000.csv --slot-seconds 3600

For each ``--slot-seconds`` (0: none given, the trace fitted into the horizon) and each way of
reading the episode, in a fresh process: parse the trace, reset the default env replaying it
(seed 0), optionally play ``--play`` slots with every node idle, then compute the ceiling. The
ways: ``stream`` is :func:`env_upper_bound` (the tasks read in one pass, each slot's made and
dropped); ``list`` is the ceiling of ``list(env.sim.tasks)``, every task of the episode held at
once (what ``env_upper_bound`` did before). Memory is the process's maximum resident set size minus
the one after imports and a small env's reset (``resource.getrusage``), before and after the
ceiling; both ways must give the same ceiling.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
import warnings
from pathlib import Path

COLUMNS = {"submit_time": "submission_time", "model": "model_name", "duration": "run_seconds", "gpus": "num_gpu"}
WAYS = ("list", "stream")


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: kilobytes


def measure(path: str, slot_seconds: float | None, way: str, play: int) -> dict:
    """Run in a fresh process: imports and a small env first, then parse, reset, play and the ceiling."""
    import mara_env
    from mara_env.core.upper_bound import completion_ceiling, env_upper_bound, slot_capacity
    from mara_env.workloads import TraceArrivals

    mara_env.raw_env(forecaster="none").reset(seed=0)  # imports and the workload
    base = rss_mb()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # rows past the horizon
        env = mara_env.raw_env(
            forecaster="none", arrivals=TraceArrivals(path, slot_seconds=slot_seconds, columns=COLUMNS)
        )
        env.reset(seed=0)
        for _ in range(play):
            if env.sim.done:
                break
            for _ in env.agents:
                env.step(0)
        before = rss_mb() - base
        start = time.perf_counter()
        if way == "stream":
            bound = env_upper_bound(env)
        else:
            capacity = slot_capacity(env.sim.speeds, env.node_timeline, env.sim.config.horizon)
            bound = completion_ceiling(list(env.sim.tasks), capacity)
        seconds = time.perf_counter() - start
    return {
        "slot_seconds": slot_seconds,
        "way": way,
        "played_slots": env.sim.slot,
        "tasks": bound.tasks,
        "ceiling": bound.completions,
        "ceiling_share": bound.rate,
        "ceiling_s": round(seconds, 2),
        "peak_mb_before_ceiling": round(before, 1),
        "peak_mb_after_ceiling": round(rss_mb() - base, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trace", type=Path, default=Path("runs/trace_parse/trace_1000000.csv"))
    parser.add_argument("--slot-seconds", type=float, nargs="+", default=[3600.0], help="0 = fit the span")
    parser.add_argument("--ways", nargs="+", choices=WAYS, default=list(WAYS))
    parser.add_argument("--play", type=int, default=0, help="slots played (all nodes idle) before the ceiling")
    parser.add_argument("--out", type=Path, default=Path("runs/ceiling_memory/results.json"))
    parser.add_argument("--measure", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        path, slot, way, play = args.measure
        print(json.dumps(measure(path, float(slot) or None, way, int(play))))
        return
    if not args.trace.exists():
        raise SystemExit(f"no trace at {args.trace}: write one with benchmarks/trace_parse.py")
    results = []
    for slot in args.slot_seconds:
        for way in args.ways:
            cmd = [sys.executable, __file__, "--measure", str(args.trace), str(slot), way, str(args.play)]
            done = subprocess.run(cmd, capture_output=True, text=True, check=True)
            results.append(json.loads(done.stdout.strip().splitlines()[-1]))
            print(json.dumps(results[-1]), flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
