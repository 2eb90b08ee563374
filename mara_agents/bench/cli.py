"""The ``mara bench`` subcommand, and the agents and env options it shares with ``mara compare``.

Every value is checked by argparse types (one ``mara bench: error: argument ...`` line, exit code 2)
or by :meth:`BenchConfig.validate` before any work; defaults come from ``mara_env.config.EnvConfig``.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable, Sequence

from mara_agents.bench.backends import LOCAL_RAY
from mara_agents.bench.config import BenchConfig
from mara_agents.bench.run import DEFAULT_CELL_TIMEOUT, default_jobs, run_bench
from mara_agents.registry import SCHEDULERS
from mara_env.config import DEFAULTS
from mara_env.workloads import LOAD_PRESETS

AGENTS_HELP = (
    "registered names ({names}), NAME:CHECKPOINT for a registered policy with another checkpoint "
    "(e.g. mara:runs/mara/checkpoint.pt), or module:Class import paths (called with no arguments); "
    "any of them may end with @FORECASTER to play on that forecaster (e.g. srw@flow_situ)"
)


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


def add_agent_arguments(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument(
        "--agents",
        nargs="+",
        default=list(SCHEDULERS),
        metavar="AGENT",
        help=f"{what}: {AGENTS_HELP.format(names=', '.join(SCHEDULERS))} (default: all registered)",
    )
    parser.add_argument("--seeds", type=POSITIVE_INT, default=20, help="episodes per agent (default 20)")
    parser.add_argument("--seed-start", type=NONNEG_INT, default=0, help="first seed (default 0)")


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
    add_agent_arguments(bench, "agents to benchmark")
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
