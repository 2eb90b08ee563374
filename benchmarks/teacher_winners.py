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

``--replays R`` (R >= 2) also plays every scenario again on R - 1 other seeds (same cluster, load and
workload; other arrivals and curves) and reports how often two disjoint halves of the replays name the
same winner: one replay against another (the per-episode label the teacher gives today), and the mean
of the first R // 2 replays against the mean of the next R // 2. Labels a student can learn from the
scenario should agree far more often than a coin toss among the candidates.

    python benchmarks/teacher_winners.py --workloads rl --episodes 12 --replays 4 --out runs/winners_rl
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
REPLAY_STRIDE = 100_000_000  # replay k of a scenario plays seed + k * stride: still above every training seed


def draw_scenarios(
    sampler: ScenarioSampler, workload: str, count: int, min_nodes: int, first: int, min_load: float = 0.0
) -> list:
    """``count`` ``(seed, settings)`` pairs of scenarios with at least ``min_nodes`` nodes and an offered load of
    at least ``min_load``, set to ``workload``."""
    drawn, seed = [], first
    while len(drawn) < count:
        settings = scenario_settings({}, sampler, seed)
        if settings["num_nodes"] >= min_nodes and settings["load"] >= min_load:
            drawn.append((seed, {**settings, "workload": workload}))
        seed += 1
    return drawn


def rate_table(episodes: list[dict[str, float]], names: list[str]) -> np.ndarray:
    """``(episodes, candidates)`` completion rates in ``names`` order; ``-inf`` where a candidate was gated off."""
    return np.array([[episode.get(name, -np.inf) for name in names] for episode in episodes])


def summarise(rates: list[dict[str, float]], names: list[str]) -> dict:
    """Wins, mean rates and the winner's margin over the runner-up, over the episodes of one workload.

    A candidate gated off a cluster size (``AGENT@N``) is missing from those episodes: it neither wins
    them nor counts in its mean (``nan`` if it played none).
    """
    table = rate_table(rates, names)
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


def winner_agreement(replays: list[list[dict[str, float]]], names: list[str], group: int) -> float:
    """Share of scenarios whose winner over replays ``[0, group)`` (by mean rate) is also the winner over
    replays ``[group, 2 * group)``; ``replays`` holds each scenario's per-replay rates (as ``summarise``
    takes them). Ties go to the first candidate, as the teacher breaks them; a gated candidate is absent."""
    if group < 1 or any(len(played) < 2 * group for played in replays):
        raise ValueError(f"every scenario needs at least {2 * group} replays for halves of {group}")

    def winner(episodes: list[dict[str, float]]) -> int:
        return int(rate_table(episodes, names).mean(axis=0).argmax())

    same = [winner(played[:group]) == winner(played[group : 2 * group]) for played in replays]
    return float(np.mean(same))


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--teacher", default=GENERALIST_TEACHER, help="a best teacher (default: the generalist's)")
    parser.add_argument("--workloads", nargs="+", default=sorted(WORKLOADS), choices=sorted(WORKLOADS))
    parser.add_argument("--episodes", type=int, default=12, help="scenarios per workload (default 12)")
    parser.add_argument("--min-nodes", type=int, default=24, help="keep scenarios with at least this many nodes")
    parser.add_argument(
        "--min-load",
        type=float,
        default=0.0,
        help="keep scenarios offered at least this load (default 0: any; heavy is 2.1, extreme 2.8)",
    )
    parser.add_argument("--forecaster", default="flow_fixed", help="the student's forecaster (default flow_fixed)")
    parser.add_argument(
        "--max-rows",
        type=int,
        default=GENERALIST_MAX_ROWS,
        help=f"the largest K_max drawn (default {GENERALIST_MAX_ROWS}, as train_mara.py's --generalist)",
    )
    parser.add_argument(
        "--replays", type=int, default=1, help="seeds per scenario; 2 or more adds the winners' agreement (default 1)"
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
    if not 1 <= args.replays <= 16:  # the last replay's seed stays below 2**32
        parser.error(f"--replays must be a whole number from 1 to 16, got {args.replays}")
    high = args.sampler.loads[1]
    if not args.min_load < high:  # NaN fails too
        parser.error(f"--min-load must be below the largest load the sampler draws ({high}), got {args.min_load}")
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
            args.min_load,
        )
    ]
    # each scenario's rates per replay; the first replay is the episode the report has always played
    replayed: dict[str, list[list[dict[str, float]]]] = {workload: [] for workload in args.workloads}
    for workload, seed, settings in tqdm(jobs, desc="teacher candidates", unit="scenario"):
        teacher = Teacher.for_env(args.teacher, settings)
        # a candidate by the name the teacher was given (fifth_generalist, not the path it stands for)
        label = {split_gate(given)[0]: given.rpartition("@")[0] or given for given in teacher.candidates}
        replayed[workload].append(
            [
                {label[name]: rate for name, rate, _ in teacher.play_candidates(seed + REPLAY_STRIDE * k)}
                for k in range(args.replays)
            ]
        )
    # every replay of a scenario plays the same candidates, so its first names them
    names = list(dict.fromkeys(name for played in replayed.values() for replays in played for name in replays[0]))
    for workload, played in replayed.items():
        results[workload] = summarise([episodes[0] for episodes in played], names)
        if args.replays >= 2:
            results[workload]["agreement"] = {
                str(g): winner_agreement(played, names, g) for g in range(1, args.replays // 2 + 1)
            }
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
        f"{args.min_nodes} nodes{load_note(args.min_load)} and up to {args.max_rows} table rows "
        f"(`{args.forecaster}` forecasts, `train` curves, seeds from {DIAGNOSTIC_SEED:,}); "
        f"the margin is the winner's completion rate minus the runner-up's. {time.perf_counter() - start:.0f} s."
    )
    markdown = f"# Which teacher candidate wins the training scenarios\n\n{intro}\n\n{format_table(header, rows)}"
    if args.replays >= 2:
        markdown += "\n\n" + agreement_section(results, args.replays)
    if args.out:
        write_report(args.out, markdown, results)
    else:
        print(markdown)


def load_note(min_load: float) -> str:
    """The report's words for the load filter (none when every load is kept)."""
    return f", an offered load of at least {min_load:g}" if min_load > 0 else ""


def agreement_section(results: dict, replays: int) -> str:
    """The winners' agreement between disjoint halves of each scenario's replays, by workload."""
    groups = list(next(iter(results.values()))["agreement"])
    header = ["workload", *(f"same winner, {g} vs {g} seed{'s' if int(g) > 1 else ''}" for g in groups)]
    rows = [[workload, *(f"{r['agreement'][g]:.2f}" for g in groups)] for workload, r in results.items()]
    intro = (
        f"Each scenario replayed on {replays} seeds (seed + k x {REPLAY_STRIDE:,}); the share of scenarios whose "
        "winner by mean completion rate over the first replays is also the winner over as many further ones."
    )
    return f"## Do the labels hold across seeds of a scenario?\n\n{intro}\n\n{format_table(header, rows)}"


if __name__ == "__main__":
    main()
