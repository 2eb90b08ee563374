"""Which candidate of a ``best`` teacher wins the generalist's training scenarios, workload by workload.

    python benchmarks/teacher_winners.py --workloads synthetic rl tabular --episodes 12 --min-nodes 24 \\
        --out docs/results/teacher_winners

The ``best`` teacher labels each training episode with the candidate that completes the most of it
(``mara_agents.mara.teacher``). Where the winner changes from episode to episode for reasons the
student cannot see, the labels it clones conflict. This plays every candidate on scenarios drawn as the
default ``--generalist`` run draws them (its sampler with the planners' warm-up, ``train`` curves,
``--forecaster``), keeping those with at least ``--min-nodes`` nodes and setting the workload to each
one asked for, on seeds that no training or evaluation episode plays. Per workload it reports how often
each candidate wins, its mean completion rate, and by how much the winner beats the runner-up.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from tqdm import tqdm

from mara_agents.mara.scenarios import GENERALIST_MAX_ROWS, ScenarioSampler, scenario_settings
from mara_agents.mara.teacher import GENERALIST_TEACHER, Teacher, parse_teacher, split_gate
from mara_agents.stats import format_table
from mara_env.forecast.evaluation import write_report
from mara_env.workloads import WORKLOADS

DIAGNOSTIC_SEED = 2_500_000_000  # above every training seed (mara_agents.mara.scenarios), far from evaluation's
WORKLOAD_ORDER = {name: i for i, name in enumerate(sorted(WORKLOADS))}


def draw_scenarios(sampler: ScenarioSampler, workload: str, count: int, min_nodes: int, first: int) -> list:
    """``count`` ``(seed, settings)`` pairs of scenarios with at least ``min_nodes`` nodes, set to ``workload``."""
    drawn, seed = [], first
    while len(drawn) < count:
        settings = scenario_settings({}, sampler, seed)
        if settings["num_nodes"] >= min_nodes:
            drawn.append((seed, {**settings, "workload": workload}))
        seed += 1
    return drawn


def summarise(rates: list[dict[str, float]], names: list[str]) -> dict:
    """Wins, mean rates and the winner's margin over the runner-up, over the episodes of one workload.

    A candidate gated off a cluster size (``AGENT@N``) is missing from those episodes: it neither wins
    them nor counts in its mean (``nan`` if it played none).
    """
    table = np.array([[episode.get(name, -np.inf) for name in names] for episode in rates])
    ordered = np.sort(table, axis=1)
    winners = table.argmax(axis=1)  # ties to the first candidate, as the teacher breaks them
    margins = ordered[:, -1] - ordered[:, -2]
    played = np.isfinite(table)
    return {
        "episodes": len(rates),
        "wins": {name: int((winners == i).sum()) for i, name in enumerate(names)},
        "mean": {
            name: float(table[played[:, i], i].mean()) if played[:, i].any() else float("nan")
            for i, name in enumerate(names)
        },
        "margin_mean": float(margins.mean()),
        "margin_median": float(np.median(margins)),
    }


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--teacher", default=GENERALIST_TEACHER, help="a best teacher (default: the generalist's)")
    parser.add_argument("--workloads", nargs="+", default=sorted(WORKLOADS), choices=sorted(WORKLOADS))
    parser.add_argument("--episodes", type=int, default=12, help="scenarios per workload (default 12)")
    parser.add_argument("--min-nodes", type=int, default=24, help="keep scenarios with at least this many nodes")
    parser.add_argument("--forecaster", default="flow_fixed", help="the student's forecaster (default flow_fixed)")
    parser.add_argument(
        "--max-rows",
        type=int,
        default=GENERALIST_MAX_ROWS,
        help=f"the largest K_max drawn (default {GENERALIST_MAX_ROWS}, as train_mara.py's --generalist)",
    )
    parser.add_argument("--out", type=Path, help="markdown report (and .json beside it); printed without it")
    args = parser.parse_args()
    base, _ = parse_teacher(args.teacher)
    if base not in ("best", "best_shared"):
        parser.error(f"--teacher must be a best teacher (best or best_shared, +AGENT...), got {args.teacher!r}")
    fixed = {"shaping": True, "forecaster": args.forecaster, "curve_split": "train"}
    try:
        args.sampler = ScenarioSampler(fixed=fixed, warmup=True, max_tasks_cap=args.max_rows)
    except ValueError as error:
        parser.error(f"--max-rows: {error}")
    if not (args.episodes >= 1 and 1 <= args.min_nodes <= args.sampler.max_nodes):
        parser.error(
            f"need --episodes >= 1 and 1 <= --min-nodes <= {args.sampler.max_nodes} (the largest cluster drawn)"
        )
    return args


def main() -> None:
    args = parse_args()
    start = time.perf_counter()
    results = {}
    # a workload's seeds depend on its name alone, so two reports (say at 64 and 128 rows) pair episode by episode
    jobs = [
        (workload, seed, settings)
        for workload in args.workloads
        for seed, settings in draw_scenarios(
            args.sampler,
            workload,
            args.episodes,
            args.min_nodes,
            DIAGNOSTIC_SEED + 1_000_000 * WORKLOAD_ORDER[workload],
        )
    ]
    per_workload: dict[str, list[dict[str, float]]] = {workload: [] for workload in args.workloads}
    for workload, seed, settings in tqdm(jobs, desc="teacher candidates", unit="episode"):
        teacher = Teacher.for_env(args.teacher, settings)
        # a candidate by the name the teacher was given (fifth_generalist, not the path it stands for)
        label = {split_gate(given)[0]: given.rpartition("@")[0] or given for given in teacher.candidates}
        per_workload[workload].append({label[name]: rate for name, rate, _ in teacher.play_candidates(seed)})
    names = list(dict.fromkeys(name for rates in per_workload.values() for episode in rates for name in episode))
    for workload, rates in per_workload.items():
        results[workload] = summarise(rates, names)
    rows = [
        [
            workload,
            str(r["episodes"]),
            " / ".join(str(r["wins"][name]) for name in names),
            " / ".join(f"{r['mean'][name]:.3f}" for name in names),
            f"{100 * r['margin_mean']:.1f} ({100 * r['margin_median']:.1f})",
        ]
        for workload, r in results.items()
    ]
    header = ["workload", "episodes", f"wins ({' / '.join(names)})", "mean completion rate", "margin, pp (median)"]
    intro = (
        f"Teacher `{args.teacher}` on training scenarios of the default `--generalist` sampler with at least "
        f"{args.min_nodes} nodes and up to {args.max_rows} table rows (`{args.forecaster}` forecasts, `train` curves, "
        f"seeds from {DIAGNOSTIC_SEED:,}); "
        f"the margin is the winner's completion rate minus the runner-up's. {time.perf_counter() - start:.0f} s."
    )
    markdown = f"# Which teacher candidate wins the training scenarios\n\n{intro}\n\n{format_table(header, rows)}"
    if args.out:
        write_report(args.out, markdown, results)
    else:
        print(markdown)


if __name__ == "__main__":
    main()
