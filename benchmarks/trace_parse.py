"""Time and peak memory of parsing a large CSV trace and resetting an episode from it.

    python benchmarks/trace_parse.py --rows 1000000 --out runs/trace_parse

Writes a seeded trace of ``--rows`` jobs (submissions spread over ``--days`` days, durations of
10 minutes to 8 hours on 1 to 8 GPUs, deadlines 1.5x to 4x the duration after submission), then, in
a fresh process for each ``--slot-seconds`` (0: none given, the trace fitted into the horizon),
measures: parsing (``TraceArrivals``), the first ``env.reset`` of the default env replaying it (the
plan for the horizon and the first slot's task bodies) and a second one (cached plan), then, with
``--play N``, N slots played with every node idle (each slot draws its arrivals' bodies). Peak
memory is the process's maximum resident set size minus the one after imports and a small env's
reset (``resource.getrusage``), so it is what the trace costs, not numpy's, torch's or the
workload's own footprint.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

MODELS = np.array(["resnet50", "bert-base", "gpt2-small", "vit-tiny", "llama-7b", "ppo-atari"])


def write_trace(path: Path, rows: int, days: float, seed: int) -> None:
    rng = np.random.default_rng(seed)
    submit = np.sort(rng.uniform(0, days * 86_400, rows)).round(1)
    duration = np.exp(rng.uniform(np.log(600), np.log(8 * 3600), rows)).round(1)
    gpus = rng.choice([1, 2, 4, 8], rows)
    deadline = (submit + duration * rng.uniform(1.5, 4.0, rows)).round(1)
    model = MODELS[rng.integers(0, MODELS.size, rows)]
    with path.open("w") as fh:
        fh.write("job_id,submission_time,deadline,model_name,run_seconds,num_gpu\n")
        for k in range(0, rows, 100_000):
            part = slice(k, k + 100_000)
            lines = [
                f"j{j},{s},{d},{m},{u},{g}\n"
                for j, s, d, m, u, g in zip(
                    range(k, k + 100_000), submit[part], deadline[part], model[part], duration[part], gpus[part]
                )
            ]
            fh.writelines(lines)


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: kilobytes


def measure(path: str, slot_seconds: float | None, horizon: int, play: int) -> dict:
    """Run in a fresh process: imports and a small env first, then parse, two resets and ``play`` slots."""
    import warnings

    import mara_env
    from mara_env.workloads import TraceArrivals

    mara_env.raw_env(horizon=horizon).reset(seed=0)  # imports, the workload, the forecaster's weights
    base = rss_mb()
    columns = {"submit_time": "submission_time", "model": "model_name", "duration": "run_seconds", "gpus": "num_gpu"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        arrivals = TraceArrivals(path, slot_seconds=slot_seconds, columns=columns)
        t1 = time.perf_counter()
        env = mara_env.raw_env(horizon=horizon, arrivals=arrivals)
        env.reset(seed=0)
        t2 = time.perf_counter()
        at_reset = {"rows_dropped_at_reset": arrivals.rows_dropped, "first_slot_arrivals": env.sim.counters.arrived}
        env.reset(seed=1)
        t3 = time.perf_counter()
        peak_reset = rss_mb() - base
        slots = play_slots(env, play)
        t4 = time.perf_counter()
    record = {
        "rows": len(arrivals),
        "slot_seconds": slot_seconds,
        "horizon": horizon,
        "slot_length_s": round(arrivals.unit(horizon), 1),
        "rows_in_horizon": int(arrivals.plan(None, 0.0, horizon).slots.size),
        **at_reset,
        "parse_s": round(t1 - t0, 3),
        "first_reset_s": round(t2 - t1, 3),
        "second_reset_s": round(t3 - t2, 3),
        "parse_and_reset_s": round(t2 - t0, 3),
        "peak_mb_over_imports": round(peak_reset, 1),
    }
    if slots:
        record.update(
            played_slots=slots,
            play_s=round(t4 - t3, 2),
            play_s_per_slot=round((t4 - t3) / slots, 4),
            arrived=env.sim.counters.arrived,
            rows_dropped_after_play=arrivals.rows_dropped,
            peak_mb_after_play=round(rss_mb() - base, 1),
        )
    return record


def play_slots(env, slots: int) -> int:
    """Play up to ``slots`` slots, every node idle; the number played."""
    played = 0
    while played < slots and not env.sim.done:
        for _ in env.agents:
            env.step(0)
        played += 1
    return played


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--days", type=float, default=60.0)
    parser.add_argument("--horizon", type=int, default=300)
    parser.add_argument("--slot-seconds", type=float, nargs="*", default=[60.0], help="0 = fit the span")
    parser.add_argument("--play", type=int, default=0, help="then play this many slots (all nodes idle)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("runs/trace_parse"))
    parser.add_argument("--measure", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        path, slot, horizon, play = args.measure
        print(json.dumps(measure(path, float(slot) or None, int(horizon), int(play))))
        return
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"trace_{args.rows}.csv"
    if not path.exists():
        write_trace(path, args.rows, args.days, args.seed)
    print(f"trace {path}: {path.stat().st_size / 1e6:.1f} MB")
    results = []
    for slot in args.slot_seconds:
        cmd = [sys.executable, __file__, "--measure", str(path), str(slot), str(args.horizon), str(args.play)]
        done = subprocess.run(cmd, capture_output=True, text=True, check=True)
        results.append(json.loads(done.stdout.strip().splitlines()[-1]))
        print(json.dumps(results[-1]))
    (args.out / "results.json").write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
