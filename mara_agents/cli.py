"""The ``mara`` command line: ``compare`` (schedulers side by side), ``bench`` (the benchmarking harness),
``forecast-eval`` (forecasters) and ``describe`` (presets).

``compare`` and ``bench`` take the same agents (registered names, ``NAME:CHECKPOINT``, ``module:Class``,
each optionally ending ``@FORECASTER``) and the same env options, built by one
:class:`~mara_agents.bench.BenchConfig`, so a ``compare`` row and the matching ``bench`` cell are the
same episodes. Every bad value is reported as one argparse-style line (exit code 2) before any work.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from mara_agents.bench.cells import cell_env
from mara_agents.bench.cli import (
    POSITIVE_INT,
    add_agent_arguments,
    add_bench_parser,
    add_env_arguments,
    config_from_args,
)
from mara_agents.bench.files import write_json
from mara_agents.evaluation import evaluate
from mara_agents.registry import load_agent
from mara_agents.stats import format_table as format_stats_table
from mara_agents.stats import summarize
from mara_env import __version__
from mara_env.config import DEFAULTS

TABLE_METRICS = (
    "completion_rate",
    "completed",
    "arrived",
    "wasted_work",
    "utilisation",
    "switches_per_task",
    "upper_bound_rate",
)


def format_table(summaries: dict[str, dict], metrics: Sequence[str] = TABLE_METRICS) -> str:
    """A markdown table: one line per scheduler, ``mean ± 95% CI`` per metric (``n/a`` if undefined)."""
    rows = [[name, *(summary.get(m) for m in metrics)] for name, summary in summaries.items()]
    return format_stats_table(["scheduler", *metrics], rows)


# ------------------------------------------------------------------------------ compare
def cmd_compare(args: argparse.Namespace) -> int:
    if args.json is not None:
        _check_writable(Path(args.json), "--json")
    config = config_from_args(args, [args.workload], [args.load])
    env_kwargs = cell_env(config.env_kwargs(), args.workload, args.load)
    summaries, records = {}, {}
    for name in config.agents:
        records[name] = evaluate(load_agent(name, "."), config.seed_list, progress=not args.quiet, **env_kwargs)
        summaries[name] = summarize(records[name])
    seeds = config.seed_list
    shown = ", ".join(f"{k}={v}" for k, v in env_kwargs.items())
    print(f"{len(seeds)} seeds ({seeds[0]}..{seeds[-1]}); {shown}; mean ± 95% CI (n/a: undefined)\n")
    print(format_table(summaries))
    if all(r.get("arrived", 1) == 0 for rs in records.values() for r in rs):
        print(f"mara compare: no task arrived within --horizon {args.horizon} in any episode: every rate is 0 "
              "by convention; use a longer horizon", file=sys.stderr)  # fmt: skip
    if args.json:
        write_json(Path(args.json), {"config": env_kwargs, "seeds": seeds, "records": records})
    return 0


def _check_writable(path: Path, flag: str) -> None:
    """``ValueError`` now, not after the work, if ``path`` cannot be written."""
    if path.is_dir():
        raise ValueError(f"{flag} must name a file, but {str(path)!r} is a folder")
    if not path.parent.is_dir():
        raise ValueError(f"{flag}: folder {str(path.parent)!r} does not exist")


def add_compare_parser(sub: argparse._SubParsersAction) -> None:
    compare = sub.add_parser("compare", help="compare schedulers over seeded episodes and print a table")
    add_agent_arguments(compare, "schedulers to compare")
    compare.add_argument("--workload", default=DEFAULTS.workload, help="workload name (default %(default)s)")
    compare.add_argument("--load", default=DEFAULTS.load, help="load preset (train, heavy, extreme) or a number > 0")
    add_env_arguments(compare)
    compare.add_argument("--json", metavar="PATH", help="also write the per-episode records here")
    compare.add_argument("--quiet", action="store_true", help="no progress bars")
    compare.set_defaults(func=cmd_compare)


# ------------------------------------------------------------------------------ describe
def cmd_describe(args: argparse.Namespace) -> int:
    from mara_env.workloads import describe

    describe(num_nodes=args.num_nodes, horizon=args.horizon)
    return 0


def cmd_forecast_eval(args: argparse.Namespace) -> int:
    from mara_env.forecast.evaluation import benchmark, format_rows

    if args.holdout_family:
        from mara_env.forecast import holdout

        rows = []
        for family in holdout.holdout_families(args.holdout_family):
            weights = holdout.weights_for(family, args.holdout_dir, progress=True)
            rows += holdout.evaluate_family(family, weights, args.forecasters, args.prefixes, args.tasks, args.seed)
        print(format_rows(rows))
        print(holdout.format_summary(holdout.summarise(rows)))
    else:
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
    parser.add_argument("--version", action="version", version=f"mara {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    add_compare_parser(sub)
    add_bench_parser(sub)

    fe = sub.add_parser("forecast-eval", help="remaining-work error of the forecasters on test curves")
    fe.add_argument("--workloads", nargs="+", default=["synthetic", "rl", "vision"])
    fe.add_argument("--forecasters", nargs="+", default=["flow", "wls", "dkf"])
    fe.add_argument("--prefixes", nargs="+", type=float, default=[0.1, 0.25, 0.5])
    fe.add_argument("--tasks", type=int, default=300, help="test tasks per workload and prefix")
    fe.add_argument("--seed", type=int, default=0)
    fe.add_argument("--json", metavar="PATH", help="write the rows as JSON here")
    fe.add_argument(
        "--holdout-family",
        metavar="NAME",
        help="leave-one-family-out: train flow without bank NAME ('all' = each new family in turn) and test on it",
    )
    fe.add_argument("--holdout-dir", default="runs/holdout", help="where the per-family flow weights go / are reused")
    fe.set_defaults(func=cmd_forecast_eval)

    desc = sub.add_parser("describe", help="print the workload x load presets")
    desc.add_argument("--num-nodes", type=POSITIVE_INT, default=DEFAULTS.num_nodes)
    desc.add_argument("--horizon", type=POSITIVE_INT, default=DEFAULTS.horizon)
    desc.set_defaults(func=cmd_describe)
    return parser


def check_forecast_eval(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Bounds of ``forecast-eval``'s numbers, checked here before any work (its parser takes plain numbers)."""
    tasks, prefixes = getattr(args, "tasks", 1), getattr(args, "prefixes", [])
    if isinstance(tasks, int) and tasks < 1:
        parser.error(f"forecast-eval: argument --tasks: must be >= 1, got {tasks}")
    bad = [p for p in prefixes if not (isinstance(p, float) and 0.0 < p < 1.0)]
    if bad:
        parser.error(f"forecast-eval: argument --prefixes: each must be a fraction in (0, 1), got {bad}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "forecast-eval":
        check_forecast_eval(parser, args)
    try:
        return args.func(args)
    except ValueError as err:  # bad config: one clear line, no traceback
        print(f"mara {args.command}: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
