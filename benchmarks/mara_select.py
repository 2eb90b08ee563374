"""Choose a MARA checkpoint on validation seeds: every kept checkpoint of a run on a few scenarios.

    python benchmarks/mara_select.py runs/mara_generalist/checkpoints/*.pt --out docs/results/mara_select.md

Each checkpoint (and the reference schedulers ``--references``) plays the same validation episodes:
``val`` curves, seeds from 10,000,000 (no training episode and no benchmark plays them), on scenarios
chosen to span what a generalist meets (a small and a large cluster, easy and hard curves, the train
and a heavier load). The report gives the completion rate per scenario and the mean over scenarios;
pick the checkpoint with the best mean, then report test numbers once with the benchmarks.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import time
from pathlib import Path

# The worker processes each play one episode at a time, --jobs of them at once: numpy's BLAS gets one
# thread in each, as in mara bench's workers (set before numpy loads; a variable you set is kept).
for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

import numpy as np  # noqa: E402

from mara_agents.registry import load_agent  # noqa: E402
from mara_agents.stats import format_table  # noqa: E402
from mara_env.forecast.evaluation import write_report  # noqa: E402

VALIDATION_SEED = 10_000_000
SCENARIOS = {
    "M8 synthetic train": {"num_nodes": 8, "max_tasks": 16, "workload": "synthetic", "load": "train"},
    "M8 rl train": {"num_nodes": 8, "max_tasks": 16, "workload": "rl", "load": "train"},
    "M8 mixed heavy": {"num_nodes": 8, "max_tasks": 16, "workload": "mixed", "load": "heavy"},
    "M32 synthetic train": {"num_nodes": 32, "max_tasks": 64, "workload": "synthetic", "load": "train"},
    "M32 mixed heavy": {"num_nodes": 32, "max_tasks": 64, "workload": "mixed", "load": "heavy"},
    # the largest clusters, on the curves where the generalist fell behind there (added in the sixth run)
    "M64 rl train": {"num_nodes": 64, "max_tasks": 128, "workload": "rl", "load": "train"},
    "M64 tabular train": {"num_nodes": 64, "max_tasks": 128, "workload": "tabular", "load": "train"},
}


def _play(job: tuple[str, str, int, int]) -> tuple[str, str, float]:
    """One (agent, scenario, seed) episode's completion rate, on a fresh env and scheduler.

    Not through ``run_bench``: a bench cell plays its seeds one after another on one env, and the flow
    forecaster's sampling noise is not reseeded by ``reset(seed)``, so an episode's result there
    depends on the episodes before it. Here every episode stands alone.
    """
    from mara_agents.evaluation import evaluate

    spec, scenario, seed, horizon = job
    env = {**SCENARIOS[scenario], "curve_split": "val", "horizon": horizon}
    record = evaluate(load_agent(spec), [seed], **env)[0]
    return spec, scenario, float(record["completion_rate"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("checkpoints", nargs="+", type=Path, help="MARA checkpoints to compare")
    parser.add_argument("--references", nargs="*", default=["srw", "edf", "lara"], help="schedulers beside them")
    parser.add_argument("--scenarios", nargs="+", default=list(SCENARIOS), choices=list(SCENARIOS))
    parser.add_argument("--seeds", type=int, default=8, help="validation seeds per scenario")
    parser.add_argument("--horizon", type=int, default=200, help="slots per episode")
    parser.add_argument("--jobs", type=int, default=2, help="worker processes")
    parser.add_argument("--out", type=Path, default=Path("runs/mara_select"), help="writes OUT.md and OUT.json")
    args = parser.parse_args()
    specs = [f"mara:{path}" for path in args.checkpoints] + list(args.references)
    jobs = [
        (spec, scenario, VALIDATION_SEED + i, args.horizon)
        for spec in specs
        for scenario in args.scenarios
        for i in range(args.seeds)
    ]
    start = time.perf_counter()
    context = mp.get_context("fork") if "fork" in mp.get_all_start_methods() else mp.get_context()
    with context.Pool(args.jobs) as pool:
        played = pool.map(_play, jobs, chunksize=1)
    rates: dict[tuple[str, str], list[float]] = {}
    for spec, scenario, rate in played:
        rates.setdefault((spec, scenario), []).append(rate)
    rows, records = [], {}
    for spec in specs:
        means = [float(np.mean(rates[(spec, scenario)])) for scenario in args.scenarios]
        name = spec.split(":", 1)[1] if spec.startswith("mara:") else spec
        rows.append([name, *(f"{m:.3f}" for m in means), f"{np.mean(means):.3f}"])
        records[name] = {scenario: rates[(spec, scenario)] for scenario in args.scenarios}
    note = (
        f"Completion rate on {args.seeds} validation seeds per scenario (`val` curves, seeds from "
        f"{VALIDATION_SEED:,}, {args.horizon} slots, Poisson arrivals); {time.perf_counter() - start:.0f} s "
        f"with {args.jobs} processes."
    )
    table = format_table(["agent", *args.scenarios, "mean"], rows)
    write_report(args.out, note + "\n\n" + table + "\n", records)


if __name__ == "__main__":
    main()
