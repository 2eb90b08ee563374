"""MARA's acceptance tables: completion rate of MARA and every baseline, and MARA minus LARA per seed.

    python benchmarks/mara_acceptance.py --seeds 50 --jobs 2 --out docs/results/mara_acceptance.md

Every cell plays the same seeds (test-split curves, 8 nodes, 16 rows, 300 slots, Poisson arrivals), so
the MARA - LARA difference is paired by episode; its 95% CI is a t-interval over the per-seed
differences. Writes a markdown report and the raw records as JSON beside it.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from agents_by_preset import run_cells, write_report  # the sibling script (benchmarks/ is on sys.path)

from mara_agents.stats import mean_ci95

AGENTS = ["mara", "lara", "srw", "laira", "edf", "uniform", "round_robin", "random", "oracle"]
CELLS = ["synthetic:train", "synthetic:heavy", "synthetic:extreme", "rl:train", "vision:train"]


def report(results: dict, agents: list[str], cells: list[tuple[str, str]], seeds: int, seconds: float) -> str:
    header = "| workload | load | " + " | ".join(agents) + " | mara - lara (paired) |"
    lines = [header, "|" + "---|" * (len(agents) + 3)]
    for workload, load in cells:
        rates = {a: np.array([r["completion_rate"] for r in results[(a, workload, load)]]) for a in agents}
        shown = [f"{m:.3f} ± {h:.3f}" for m, h in (mean_ci95(rates[a]) for a in agents)]
        diff = "n/a"
        if "mara" in rates and "lara" in rates:
            m, h = mean_ci95(100.0 * (rates["mara"] - rates["lara"]))
            diff = f"{m:+.1f} ± {h:.1f} pp"
        lines.append(f"| {workload} | {load} | " + " | ".join(shown) + f" | {diff} |")
    note = (
        f"Completion rate, mean ± 95% CI over seeds 0..{seeds - 1}; 8 nodes, 16 rows, 300 slots, Poisson "
        f"arrivals, test-split curves; the last column is MARA minus LARA per seed, in percentage points. "
        f"{seconds:.0f} s."
    )
    return note + "\n\n" + "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=50)
    parser.add_argument("--agents", nargs="+", default=AGENTS)
    parser.add_argument("--cells", nargs="+", default=CELLS, help="workload:load pairs")
    parser.add_argument("--jobs", type=int, default=2, help="parallel processes")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    cells = [tuple(c.split(":", 1)) for c in args.cells]
    if any(len(c) != 2 for c in cells):
        parser.error(f"--cells must be workload:load pairs, got {args.cells}")
    start = time.perf_counter()
    jobs = [(a, w, load, args.seeds) for w, load in cells for a in args.agents]
    # the slowest agents first, so that the pool's last minutes are not spent on one long cell
    jobs.sort(key=lambda job: job[0] not in ("mara", "srw", "laira"))
    results = run_cells(jobs, args.jobs)
    write_report(args.out, report(results, args.agents, cells, args.seeds, time.perf_counter() - start), results)


if __name__ == "__main__":
    main()
