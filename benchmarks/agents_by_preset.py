"""Completion rate of the packaged schedulers on every workload x load preset (test curves).

    python benchmarks/agents_by_preset.py --seeds 20 --jobs 2 --out docs/results/agents_by_preset.md

Runs the grid with ``mara bench`` (``run_bench``; resumable in ``--bench-dir``) and writes a markdown
table (mean ± 95% CI over the seeds) and the raw records as JSON beside it.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import mara_agents
from mara_agents.bench import BenchConfig, cell_records, run_bench
from mara_agents.stats import format_table, summarize
from mara_env.config import DEFAULTS
from mara_env.workloads import LOAD_PRESETS


def run_grid(config: BenchConfig, bench_dir: Path, jobs: int) -> dict[tuple[str, str, str], list[dict]]:
    """Run (or resume) ``config`` with ``run_bench``; the records by (agent, workload, load).

    Raises ``RuntimeError`` listing the failed cells: a table with holes is not a result.
    """
    result = run_bench(config, bench_dir, jobs=jobs)
    if result.failures:
        raise RuntimeError("failed cells:\n" + "\n".join(e["message"].splitlines()[0] for e in result.failures))
    return cell_records(bench_dir)


def write_report(out: Path | None, text: str, results: dict[tuple[str, str, str], list[dict]]) -> None:
    """Print ``text``; with ``out``, write it there and the raw records as JSON beside it."""
    print(text)
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text)
        out.with_suffix(".json").write_text(json.dumps([r for rs in results.values() for r in rs]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--agents", nargs="+", default=list(mara_agents.SCHEDULERS))
    parser.add_argument("--workloads", nargs="+", default=["synthetic", "vision", "rl", "mixed"])
    parser.add_argument("--horizon", type=int, default=DEFAULTS.horizon, help="slots per episode (smoke runs)")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--bench-dir", type=Path, default=Path("runs/agents_by_preset"), help="run_bench's folder")
    args = parser.parse_args()
    start = time.perf_counter()
    config = BenchConfig(
        tuple(args.agents), tuple(args.workloads), tuple(LOAD_PRESETS), args.seeds, horizon=args.horizon
    )
    results = run_grid(config, args.bench_dir, args.jobs)
    rows = [
        [workload, load, *(summarize(results[(a, workload, load)])["completion_rate"] for a in args.agents)]
        for workload in args.workloads
        for load in LOAD_PRESETS
    ]
    table = format_table(["workload", "load", *args.agents], rows)
    note = (
        f"Completion rate, mean ± 95% CI over seeds 0..{args.seeds - 1}; {config.num_nodes} nodes, "
        f"{config.max_tasks} rows, {config.horizon} slots, Poisson arrivals, test-split curves; "
        f"{time.perf_counter() - start:.0f} s with {args.jobs} processes."
    )
    write_report(args.out, note + "\n\n" + table + "\n", results)


if __name__ == "__main__":
    main()
