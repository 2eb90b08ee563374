"""Completion rate of the packaged schedulers on every workload x load preset (test curves).

    python benchmarks/agents_by_preset.py --seeds 20 --jobs 2 --out docs/results/agents_by_preset.md

Writes a markdown table (mean ± 95% CI over the seeds) and the raw records as JSON beside it.
"""

from __future__ import annotations

import argparse
import json
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from tqdm.auto import tqdm

import mara_agents
from mara_env.workloads import LOAD_PRESETS


def run_cell(cell: tuple[str, str, str, int]) -> tuple[tuple[str, str, str], list[dict]]:
    agent, workload, load, seeds = cell
    return (agent, workload, load), mara_agents.evaluate(agent, range(seeds), workload=workload, load=load)


def run_cells(cells: list[tuple[str, str, str, int]], jobs: int) -> dict[tuple[str, str, str], list[dict]]:
    """``(agent, workload, load, seeds)`` cells on ``jobs`` processes: records by (agent, workload, load)."""
    with ProcessPoolExecutor(jobs) as pool:
        return dict(tqdm(pool.map(run_cell, cells), total=len(cells), desc="cells"))


def write_report(out: Path | None, text: str, results: dict[tuple[str, str, str], list[dict]]) -> None:
    """Print ``text``; with ``out``, write it there and the raw records as JSON beside it."""
    print(text)
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text)
        records = [{"agent": a, "workload": w, "load": load, **r} for (a, w, load), rs in results.items() for r in rs]
        out.with_suffix(".json").write_text(json.dumps(records))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--agents", nargs="+", default=list(mara_agents.SCHEDULERS))
    parser.add_argument("--workloads", nargs="+", default=["synthetic", "vision", "rl", "mixed"])
    parser.add_argument("--jobs", type=int, default=1, help="parallel processes")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    start = time.perf_counter()
    cells = [(a, w, load, args.seeds) for w in args.workloads for load in LOAD_PRESETS for a in args.agents]
    results = run_cells(cells, args.jobs)
    lines = ["| workload | load | " + " | ".join(args.agents) + " |", "|" + "---|" * (len(args.agents) + 2)]
    for workload in args.workloads:
        for load in LOAD_PRESETS:
            rates = [mara_agents.summarize(results[(a, workload, load)])["completion_rate"] for a in args.agents]
            lines.append(
                f"| {workload} | {load} | " + " | ".join(f"{r['mean']:.3f} ± {r['ci95']:.3f}" for r in rates) + " |"
            )
    note = (
        f"Completion rate, mean ± 95% CI over seeds 0..{args.seeds - 1}; 8 nodes, 16 rows, 300 slots, "
        f"Poisson arrivals, test-split curves; {time.perf_counter() - start:.0f} s with {args.jobs} processes."
    )
    write_report(args.out, note + "\n\n" + "\n".join(lines) + "\n", results)


if __name__ == "__main__":
    main()
