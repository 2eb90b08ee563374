"""The ``mara`` command line: ``compare`` (schedulers side by side), ``bench`` (the benchmarking harness),
``forecast-eval`` (forecasters) and ``describe`` (presets)."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Sequence

from mara_agents.bench import LOCAL_RAY, BenchConfig, default_jobs, run_bench
from mara_agents.evaluation import evaluate
from mara_agents.registry import SCHEDULERS
from mara_agents.stats import summarize
from mara_env.workloads import LOAD_PRESETS

TABLE_METRICS = ("completion_rate", "completed", "arrived", "wasted_work", "utilisation", "switches_per_task")


def format_table(summaries: dict[str, dict], metrics: Sequence[str] = TABLE_METRICS) -> str:
    """A markdown table: one line per scheduler, ``mean ± 95% CI`` per metric."""
    header = "| scheduler | " + " | ".join(metrics) + " |"
    lines = [header, "|" + "---|" * (len(metrics) + 1)]
    for name, summary in summaries.items():
        cells = []
        for metric in metrics:
            s = summary[metric]
            cells.append(f"{s['mean']:.3f} ± {s['ci95']:.3f}")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _env_kwargs(args: argparse.Namespace) -> dict:
    load: str | float = args.load
    with contextlib.suppress(ValueError):
        load = float(args.load)
    return {
        "num_nodes": args.num_nodes,
        "max_tasks": args.max_tasks,
        "horizon": args.horizon,
        "workload": args.workload,
        "load": load,
        "arrivals": args.arrivals,
        "curve_split": args.curve_split,
    }


def cmd_compare(args: argparse.Namespace) -> int:
    env_kwargs = _env_kwargs(args)
    seeds = range(args.seed_start, args.seed_start + args.seeds)
    summaries, records = {}, {}
    for name in args.agents:
        records[name] = evaluate(name, seeds, progress=not args.quiet, **env_kwargs)
        summaries[name] = summarize(records[name])
    config = ", ".join(f"{k}={v}" for k, v in env_kwargs.items())
    print(f"{len(seeds)} seeds ({seeds.start}..{seeds.stop - 1}); {config}; mean ± 95% CI\n")
    print(format_table(summaries))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"config": env_kwargs, "seeds": list(seeds), "records": records}, fh, indent=1)
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    """Run (or resume) the bench grid; exit code 1 if any cell failed, 0 otherwise."""
    config = BenchConfig(
        agents=tuple(args.agents),
        workloads=tuple(args.workloads),
        loads=tuple(args.loads),
        seeds=args.seeds,
        seed_start=args.seed_start,
        num_nodes=args.num_nodes,
        max_tasks=args.max_tasks,
        horizon=args.horizon,
    )
    result = run_bench(config, args.out, jobs=args.jobs, ray_address=args.ray, progress=not args.quiet)
    print(result.table)
    print(
        f"\n{result.total} cells: {result.ran} run now, {result.reused} reused, {len(result.failures)} failed; "
        f"{result.wall_seconds:.1f} s; outputs in {result.out}/"
    )
    for message in dict.fromkeys(error["message"] for error in result.failures):  # a bad agent: once
        print(f"mara bench: failed: {message}", file=sys.stderr)
    if result.failures:
        print(f"mara bench: details in {result.out / 'failures.json'}; a rerun retries failed cells", file=sys.stderr)
    return 1 if result.failures else 0


def add_bench_parser(sub: argparse._SubParsersAction) -> None:
    """The ``mara bench`` subcommand and its flags (documented in docs/bench.md)."""
    bench = sub.add_parser(
        "bench",
        help="benchmark schedulers on workloads x loads x seeds: tables, figures, resumable",
        description="Run every agent on every workload at every load over the same seeds; write raw results, "
        "a markdown table and figures into --out. Finished cells are reused by a rerun; failed ones are retried.",
    )
    bench.add_argument(
        "--agents",
        nargs="+",
        default=list(SCHEDULERS),
        metavar="AGENT",
        help="registered names or module:Class import paths (the class is called with no arguments; "
        f"default: all of {sorted(SCHEDULERS)})",
    )
    bench.add_argument(
        "--workloads",
        nargs="+",
        default=["synthetic"],
        metavar="NAME",
        help="synthetic, vision, rl, mixed (default synthetic)",
    )
    bench.add_argument(
        "--loads",
        nargs="+",
        default=list(LOAD_PRESETS),
        metavar="LOAD",
        help=f"load presets {list(LOAD_PRESETS)} or numbers > 0 (default: all presets)",
    )
    bench.add_argument("--seeds", type=int, default=20, help="episodes per cell (default 20)")
    bench.add_argument("--seed-start", type=int, default=0, help="first seed (default 0)")
    bench.add_argument("--num-nodes", type=int, default=8, help="nodes (default 8)")
    bench.add_argument("--max-tasks", type=int, default=16, help="task-table rows (default 16)")
    bench.add_argument("--horizon", type=int, default=300, help="slots per episode (default 300)")
    bench.add_argument(
        "--jobs", type=int, default=default_jobs(), help="worker processes (default min(2, cpu count)); 1 runs here"
    )
    bench.add_argument(
        "--ray",
        nargs="?",
        const=LOCAL_RAY,
        metavar="ADDRESS",
        help="run the cells as Ray tasks: on the cluster at ADDRESS, or on a new local Ray with --jobs CPUs "
        "(needs pip install 'mara[ray]')",
    )
    bench.add_argument("--out", required=True, metavar="DIR", help="output folder (reused cells live in DIR/cells)")
    bench.add_argument("--quiet", action="store_true", help="no progress bar")
    bench.set_defaults(func=cmd_bench)


def cmd_describe(args: argparse.Namespace) -> int:
    from mara_env.workloads import describe

    describe(num_nodes=args.num_nodes, horizon=args.horizon)
    return 0


def cmd_forecast_eval(args: argparse.Namespace) -> int:
    from mara_env.forecast.evaluation import benchmark, format_rows

    rows = benchmark(args.workloads, args.forecasters, args.prefixes, args.tasks, args.seed)
    print(format_rows(rows))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mara", description="Cluster scheduling of training tasks: a PettingZoo benchmark."
    )
    sub = parser.add_subparsers(dest="command", required=True)

    compare = sub.add_parser("compare", help="compare schedulers over seeded episodes and print a table")
    compare.add_argument(
        "--agents",
        nargs="+",
        default=list(SCHEDULERS),
        choices=sorted(SCHEDULERS),
        metavar="NAME",
        help=f"schedulers to compare (default: all of {sorted(SCHEDULERS)})",
    )
    compare.add_argument("--seeds", type=int, default=20, help="number of episodes per scheduler (default 20)")
    compare.add_argument("--seed-start", type=int, default=0, help="first seed (default 0)")
    compare.add_argument("--workload", default="synthetic", help="workload name (default synthetic)")
    compare.add_argument("--load", default="train", help="load preset (train, heavy, extreme) or a number > 0")
    compare.add_argument("--arrivals", default="poisson", help="poisson, bursty, or a path to a .csv trace")
    compare.add_argument(
        "--curve-split",
        default="test",
        choices=("train", "val", "test"),
        help="which split of the curve bank tasks come from (default test)",
    )
    compare.add_argument("--num-nodes", type=int, default=8)
    compare.add_argument("--max-tasks", type=int, default=16)
    compare.add_argument("--horizon", type=int, default=300)
    compare.add_argument("--json", metavar="PATH", help="also write the per-episode records here")
    compare.add_argument("--quiet", action="store_true", help="no progress bars")
    compare.set_defaults(func=cmd_compare)

    add_bench_parser(sub)

    fe = sub.add_parser("forecast-eval", help="remaining-work error of the forecasters on test curves")
    fe.add_argument("--workloads", nargs="+", default=["synthetic", "rl", "vision"])
    fe.add_argument("--forecasters", nargs="+", default=["flow", "wls", "dkf"])
    fe.add_argument("--prefixes", nargs="+", type=float, default=[0.1, 0.25, 0.5])
    fe.add_argument("--tasks", type=int, default=300, help="test tasks per workload and prefix")
    fe.add_argument("--seed", type=int, default=0)
    fe.add_argument("--json", metavar="PATH", help="write the rows as JSON here")
    fe.set_defaults(func=cmd_forecast_eval)

    desc = sub.add_parser("describe", help="print the workload x load presets")
    desc.add_argument("--num-nodes", type=int, default=8)
    desc.add_argument("--horizon", type=int, default=300)
    desc.set_defaults(func=cmd_describe)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command != "bench" and getattr(args, "seeds", 1) < 1:  # bench checks its values itself
        parser.error("--seeds must be >= 1")
    try:
        return args.func(args)
    except ValueError as err:  # bad config: one clear line, no traceback
        print(f"mara: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
