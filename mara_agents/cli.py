"""The ``mara`` command line: ``compare`` (schedulers side by side), ``bench`` (the benchmarking harness),
``forecast-eval`` (forecasters) and ``describe`` (presets).

``compare`` and ``bench`` take the same agents (registered names, ``NAME:CHECKPOINT``, ``module:Class``)
and the same env options, built by one :class:`~mara_agents.bench.BenchConfig`, so a ``compare`` row
and the matching ``bench`` cell are the same episodes. Every bad value is reported as one
argparse-style line (exit code 2) before any work.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from mara_agents.bench import DEFAULT_CELL_TIMEOUT, LOCAL_RAY, BenchConfig, default_jobs, run_bench
from mara_agents.bench.cells import cell_env
from mara_agents.bench.files import write_json
from mara_agents.evaluation import evaluate
from mara_agents.registry import SCHEDULERS, load_agent
from mara_agents.stats import format_table as format_stats_table
from mara_agents.stats import summarize
from mara_env import __version__
from mara_env.config import DEFAULTS
from mara_env.workloads import LOAD_PRESETS

TABLE_METRICS = ("completion_rate", "completed", "arrived", "wasted_work", "utilisation", "switches_per_task")
AGENTS_HELP = (
    "registered names ({names}), NAME:CHECKPOINT for a registered policy with another checkpoint "
    "(e.g. mara:runs/mara/checkpoint.pt), or module:Class import paths (called with no arguments)"
)


def format_table(summaries: dict[str, dict], metrics: Sequence[str] = TABLE_METRICS) -> str:
    """A markdown table: one line per scheduler, ``mean ± 95% CI`` per metric (``n/a`` if undefined)."""
    rows = [[name, *(summary.get(m) for m in metrics)] for name, summary in summaries.items()]
    return format_stats_table(["scheduler", *metrics], rows)


# ------------------------------------------------------------------------------ argument types
def _number(kind: type, low: float, low_open: bool = False, high: float | None = None) -> Callable[[str], float]:
    """An argparse type: a ``kind`` number >= ``low`` (> with ``low_open``), <= ``high``; finite."""

    def parse(text: str) -> float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected {'an integer' if kind is int else 'a number'}, got {text!r}"
            ) from None
        bad = not math.isfinite(value) or value < low or (low_open and value == low)
        if bad or (high is not None and value > high):
            where = f"> {low:g}" if low_open else f">= {low:g}"
            raise argparse.ArgumentTypeError(
                f"must be {where}{'' if high is None else f' and <= {high:g}'}, got {text}"
            )
        return value

    parse.__name__ = "integer" if kind is int else "number"
    return parse


POSITIVE_INT, NONNEG_INT, POSITIVE = _number(int, 1), _number(int, 0), _number(float, 0.0, low_open=True)


def _timeout(text: str) -> float | str | None:
    return {"none": None, "auto": "auto"}[text.lower()] if text.lower() in ("none", "auto") else POSITIVE(text)


def _trace_columns(text: str) -> dict[str, str]:
    from mara_env.workloads.trace import parse_trace_columns

    try:
        return parse_trace_columns(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _faults(text: str) -> dict[str, float]:
    """``mtbf=200,mttr=20`` (slots between failures and to repair, per node)."""
    faults = {}
    for part in (p.strip() for p in text.split(",") if p.strip()):
        key, sep, value = (s.strip() for s in part.partition("="))
        if not sep or key not in ("mtbf", "mttr"):
            raise argparse.ArgumentTypeError(f"expected mtbf=SLOTS,mttr=SLOTS, got {text!r}")
        faults[key] = POSITIVE(value)
    if set(faults) != {"mtbf", "mttr"}:
        raise argparse.ArgumentTypeError(f"give both mtbf and mttr, e.g. mtbf=200,mttr=20, got {text!r}")
    return faults


def add_env_arguments(parser: argparse.ArgumentParser) -> None:
    """The env options ``compare`` and ``bench`` share (defaults: ``mara_env.config.EnvConfig``)."""
    env = parser.add_argument_group("environment (the same in every episode)")
    env.add_argument("--num-nodes", type=POSITIVE_INT, default=DEFAULTS.num_nodes, help="nodes (default %(default)s)")
    env.add_argument(
        "--max-tasks", type=POSITIVE_INT, default=DEFAULTS.max_tasks, help="task-table rows (default %(default)s)"
    )
    env.add_argument(
        "--horizon", type=POSITIVE_INT, default=DEFAULTS.horizon, help="slots per episode (default %(default)s)"
    )
    env.add_argument(
        "--arrivals",
        default=DEFAULTS.arrivals,
        metavar="PROCESS|PATH",
        help="poisson, bursty, or a .csv trace to replay (default %(default)s)",
    )
    env.add_argument(
        "--trace-columns",
        type=_trace_columns,
        metavar="OURS=THEIRS,...",
        help="the trace's column names, e.g. submit_time=submission_time,gpus=num_gpu",
    )
    env.add_argument("--slot-seconds", type=POSITIVE, metavar="S", help="slot length in seconds for a trace")
    env.add_argument(
        "--faults",
        type=_faults,
        metavar="mtbf=M,mttr=R",
        help="random node outages: mean slots between failures and to repair (default none)",
    )
    env.add_argument(
        "--switch-cost",
        type=_number(float, 0.0, high=0.999),
        default=DEFAULTS.switch_cost,
        help="fraction of a slot lost when a node switches task (default %(default)s)",
    )
    env.add_argument(
        "--curve-split",
        default="test",
        choices=("train", "val", "test"),
        help="curve-bank split tasks come from (default test: curves nothing was fitted on)",
    )


def config_from_args(args: argparse.Namespace, workloads: Sequence[str], loads: Sequence[str]) -> BenchConfig:
    """The grid both commands run (``compare``: one workload and load), checked before any work."""
    config = BenchConfig(
        agents=tuple(args.agents),
        workloads=tuple(workloads),
        loads=tuple(loads),
        seeds=args.seeds,
        seed_start=args.seed_start,
        num_nodes=args.num_nodes,
        max_tasks=args.max_tasks,
        horizon=args.horizon,
        switch_cost=args.switch_cost,
        curve_split=args.curve_split,
        arrivals=args.arrivals,
        trace_columns=args.trace_columns,
        slot_seconds=args.slot_seconds,
        faults=args.faults,
        reference=getattr(args, "reference", None),
    )
    config.validate()
    return config


def _add_agents(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument(
        "--agents",
        nargs="+",
        default=list(SCHEDULERS),
        metavar="AGENT",
        help=f"{what}: {AGENTS_HELP.format(names=', '.join(SCHEDULERS))} (default: all registered)",
    )
    parser.add_argument("--seeds", type=POSITIVE_INT, default=20, help="episodes per agent (default 20)")
    parser.add_argument("--seed-start", type=NONNEG_INT, default=0, help="first seed (default 0)")


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
    _add_agents(compare, "schedulers to compare")
    compare.add_argument("--workload", default=DEFAULTS.workload, help="workload name (default %(default)s)")
    compare.add_argument("--load", default=DEFAULTS.load, help="load preset (train, heavy, extreme) or a number > 0")
    add_env_arguments(compare)
    compare.add_argument("--json", metavar="PATH", help="also write the per-episode records here")
    compare.add_argument("--quiet", action="store_true", help="no progress bars")
    compare.set_defaults(func=cmd_compare)


# ------------------------------------------------------------------------------ bench
def cmd_bench(args: argparse.Namespace) -> int:
    """Run (or resume) the bench grid; exit code 1 if any cell failed, 130 if interrupted, 0 otherwise."""
    loads = args.loads if args.loads is not None else ([DEFAULTS.load] if _is_trace(args) else list(LOAD_PRESETS))
    config = config_from_args(args, args.workloads, loads)
    try:
        result = run_bench(
            config,
            args.out,
            jobs=args.jobs,
            ray_address=args.ray,
            progress=not args.quiet,
            cell_timeout=args.cell_timeout,
        )
    except KeyboardInterrupt as stop:
        done = stop.args[0] if stop.args else None
        if done is not None:
            print(
                f"\nmara bench: interrupted; {done.ran} cells finished now, {done.reused} reused, all saved in "
                f"{done.out}/cells; run the same command again to resume",
                file=sys.stderr,
            )
        else:
            print("\nmara bench: interrupted before any cell ran", file=sys.stderr)
        return 130
    print(result.table)
    print(
        f"\n{result.total} cells: {result.ran} run now, {result.reused} reused, {len(result.failures)} failed; "
        f"{result.wall_seconds:.1f} s; outputs in {result.out}/"
    )
    for message in dict.fromkeys(error["message"] for error in result.failures):
        print(f"mara bench: failed: {message}", file=sys.stderr)
    if result.failures:
        print(f"mara bench: details in {result.out / 'failures.json'}; a rerun retries failed cells", file=sys.stderr)
    return 1 if result.failures else 0


def _is_trace(args: argparse.Namespace) -> bool:
    return args.arrivals not in ("poisson", "bursty")


def add_bench_parser(sub: argparse._SubParsersAction) -> None:
    """The ``mara bench`` subcommand and its flags (documented in docs/bench.md)."""
    bench = sub.add_parser(
        "bench",
        help="benchmark schedulers on workloads x loads x seeds: tables, figures, resumable",
        description="Run every agent on every workload at every load over the same seeds; write raw results, "
        "tables, a summary and figures into --out. Finished cells are reused by a rerun; failed ones are retried.",
    )
    _add_agents(bench, "agents to benchmark")
    bench.add_argument(
        "--workloads",
        nargs="+",
        default=[DEFAULTS.workload],
        metavar="NAME",
        help="synthetic, vision, rl, mixed (default %(default)s)",
    )
    bench.add_argument(
        "--loads",
        nargs="+",
        metavar="LOAD",
        help=f"load presets {list(LOAD_PRESETS)} or numbers > 0 (default: all presets; "
        f"with a trace, one load: {DEFAULTS.load})",
    )
    bench.add_argument(
        "--reference",
        metavar="AGENT",
        help="summary.json/csv give every agent's difference to this one, paired by seed (default: the first agent)",
    )
    add_env_arguments(bench)
    run = bench.add_argument_group("run")
    run.add_argument(
        "--jobs",
        type=POSITIVE_INT,
        default=default_jobs(),
        help="worker processes (default min(2, cpu count)); cells always run in workers",
    )
    run.add_argument(
        "--cell-timeout",
        type=_timeout,
        default=DEFAULT_CELL_TIMEOUT,
        metavar="SECONDS",
        help="a cell running longer fails and its worker is replaced (default auto: 60 s per episode of "
        "8 nodes x 300 slots, scaled by nodes x horizon x seeds, at least 600; none: no limit)",
    )
    run.add_argument(
        "--ray",
        nargs="?",
        const=LOCAL_RAY,
        metavar="ADDRESS",
        help="run the cells as Ray tasks: on the cluster at ADDRESS, or on a new local Ray with --jobs CPUs "
        "(needs pip install 'mara[ray]')",
    )
    run.add_argument("--out", required=True, metavar="DIR", help="output folder (finished cells live in DIR/cells)")
    run.add_argument("--quiet", action="store_true", help="no progress bar")
    bench.set_defaults(func=cmd_bench)


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
