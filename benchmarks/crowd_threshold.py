"""Choose ``edf_uniform``'s crowd threshold on validation episodes.

    python benchmarks/crowd_threshold.py --out docs/results/crowd_threshold.md
    python benchmarks/crowd_threshold.py --workloads rl --sizes 8 --seeds 2 --horizon 40   # a smoke run

``edf_uniform`` plays ``edf``'s order until the tasks in the system (in the table and queued) outnumber
``crowd`` times the table's rows (``K_max``), and ``uniform``'s fair share beyond: at 1, once a task
waits for a row. Every crowd of ``--crowds`` plays the
same episodes as ``edf``, ``uniform`` and ``srw``: ``val`` curves and seeds from 10,000,000, as
``mara_select.py`` plays them, so the choice is not made on the test grid that reports the scheduler.
The report gives the completion rate per workload, load and cluster size (``K_max = max(16, 2M)``), the
best crowd's mean over every cell and its paired difference from ``edf`` and ``uniform``.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import time
from pathlib import Path

for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")  # one BLAS thread per worker process (set before numpy loads)

import numpy as np  # noqa: E402
from generalisation import HORIZON  # noqa: E402  (the sibling script: benchmarks/ is on sys.path)
from mara_select import VALIDATION_SEED  # noqa: E402
from tqdm import tqdm  # noqa: E402

from mara_agents.registry import load_agent  # noqa: E402
from mara_agents.stats import format_mean_ci, format_table, paired_difference  # noqa: E402
from mara_env.forecast.evaluation import write_report  # noqa: E402

PLANNERS = ("edf", "uniform", "srw")


def crowd_name(crowd: float) -> str:
    return f"crowd {crowd:g}"


def _play(job: tuple[str, str, str, int, int, int]) -> tuple[tuple, float]:
    """One episode's completion rate: ``(agent, workload, load, M, seed)`` and the rate."""
    from mara_agents.evaluation import evaluate
    from mara_agents.heuristics import EDFUniformScheduler

    agent, workload, load, nodes, seed, horizon = job
    scheduler = load_agent(agent) if agent in PLANNERS else EDFUniformScheduler(crowd=float(agent.split()[1]))
    env = {"num_nodes": nodes, "max_tasks": max(16, 2 * nodes), "workload": workload, "load": load}
    record = evaluate(scheduler, [seed], curve_split="val", horizon=horizon, **env)[0]
    return (agent, workload, load, nodes, seed), float(record["completion_rate"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--crowds", nargs="+", type=float, default=[0.5, 0.75, 1.0, 1.5])
    parser.add_argument("--workloads", nargs="+", default=["synthetic", "vision", "rl", "mixed", "charlm", "tabular"])
    parser.add_argument("--loads", nargs="+", default=["train", "heavy", "extreme"])
    parser.add_argument("--sizes", nargs="+", type=int, default=[4, 8, 32])
    parser.add_argument("--seeds", type=int, default=4, help="validation seeds per cell")
    parser.add_argument("--horizon", type=int, default=HORIZON)
    parser.add_argument("--jobs", type=int, default=2, help="worker processes")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    if any(not np.isfinite(c) or c <= 0 for c in args.crowds):
        parser.error(f"--crowds must be finite shares of the table's rows, > 0; got {args.crowds}")
    if args.seeds < 2:
        parser.error(f"--seeds must be at least 2 (paired intervals need them), got {args.seeds}")
    agents = [*PLANNERS, *map(crowd_name, args.crowds)]
    cells = [(w, load, m) for w in args.workloads for m in args.sizes for load in args.loads]
    seeds = [VALIDATION_SEED + i for i in range(args.seeds)]
    jobs = [(a, *cell, s, args.horizon) for cell in cells for a in agents for s in seeds]
    start = time.perf_counter()
    with mp.get_context("spawn").Pool(args.jobs) as pool:
        rates = dict(tqdm(pool.imap(_play, jobs), total=len(jobs), desc="crowd threshold"))
    seconds = time.perf_counter() - start
    per_agent = {a: np.array([[rates[(a, *cell, s)] for s in seeds] for cell in cells]) for a in agents}
    rows = [
        [w, load, str(m), *(f"{per_agent[a][i].mean():.3f}" for a in agents)] for i, (w, load, m) in enumerate(cells)
    ]
    best = max(map(crowd_name, args.crowds), key=lambda a: per_agent[a].mean())
    versus = {p: paired_difference(per_agent[best].ravel(), per_agent[p].ravel()) for p in ("edf", "uniform")}
    note = (
        f"Completion rate per cell (`val` curves, {args.seeds} seeds from {VALIDATION_SEED:,}, {args.horizon} "
        f"slots, K_max = max(16, 2M)); `crowd C` is `edf_uniform` with that threshold. {seconds:.0f} s with "
        f"{args.jobs} processes. Mean over the {len(cells)} cells: "
        + ", ".join(f"{a} {per_agent[a].mean():.3f}" for a in agents)
        + f". Best crowd: `{best}`; paired against edf {format_mean_ci(versus['edf'], 1, 100, True, ' pp')}, "
        f"against uniform {format_mean_ci(versus['uniform'], 1, 100, True, ' pp')} (every episode of every cell)."
    )
    records = [{"agent": a, "workload": w, "load": load, "nodes": m, "seed": s, "completion_rate": r}
               for (a, w, load, m, s), r in rates.items()]  # fmt: skip
    markdown = note + "\n\n" + format_table(["workload", "load", "M", *agents], rows)
    if args.out is None:
        print(markdown)
    else:
        write_report(args.out, markdown, records)


if __name__ == "__main__":
    main()
