"""MARA's acceptance tables: completion rate of MARA and every baseline, and MARA minus LARA per seed.

    python benchmarks/mara_acceptance.py --seeds 50 --jobs 2 --out docs/results/mara_acceptance.md

Every cell plays the same seeds (test-split curves, 8 nodes, 16 rows, 300 slots, Poisson arrivals), so
the MARA - LARA difference is paired by episode; its 95% CI is a t-interval over the per-seed
differences (``summary.json`` of ``mara bench`` with ``lara`` as the reference). The cells run with
``run_bench``, one resumable folder per workload under ``--bench-dir``. Writes a markdown report and
the raw records as JSON beside it.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from agents_by_preset import run_grid, write_report  # the sibling script (benchmarks/ is on sys.path)

from mara_agents.bench import BenchConfig
from mara_agents.stats import format_mean_ci, format_table, summarize
from mara_env.config import DEFAULTS

AGENTS = ["mara", "lara", "srw", "laira", "edf", "edf_uniform", "uniform", "round_robin", "random", "oracle"]
CELLS = ["synthetic:train", "synthetic:heavy", "synthetic:extreme", "rl:train", "vision:train"]


def report(results: dict, diffs: dict, agents: list[str], cells: list[tuple[str, str]], note: str) -> str:
    rows = []
    for workload, load in cells:
        rates = [summarize(results[(a, workload, load)])["completion_rate"] for a in agents]
        diff = diffs.get((workload, load))
        rows.append([workload, load, *rates, format_mean_ci(diff, digits=1, scale=100, signed=True, unit=" pp")])
    return note + "\n\n" + format_table(["workload", "load", *agents, "mara - lara (paired)"], rows) + "\n"


def paired_diffs(bench_dir: Path) -> dict[tuple[str, str], dict]:
    """MARA minus LARA per (workload, load) from a bench folder's ``summary.json`` (reference lara)."""
    rows = json.loads((bench_dir / "summary.json").read_text())
    return {
        (r["workload"], r["load"]): r["diff"]["completion_rate"] for r in rows if r["agent"] == "mara" and r.get("diff")
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=50)
    parser.add_argument("--agents", nargs="+", default=AGENTS)
    parser.add_argument("--cells", nargs="+", default=CELLS, help="workload:load pairs")
    parser.add_argument("--horizon", type=int, default=DEFAULTS.horizon, help="slots per episode (smoke runs)")
    parser.add_argument("--jobs", type=int, default=2, help="worker processes")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--bench-dir", type=Path, default=Path("runs/mara_acceptance"), help="run_bench's folders")
    args = parser.parse_args()
    cells = [tuple(c.split(":", 1)) for c in args.cells]
    if any(len(c) != 2 for c in cells):
        parser.error(f"--cells must be workload:load pairs, got {args.cells}")
    start = time.perf_counter()
    results, diffs = {}, {}
    reference = "lara" if "lara" in args.agents else None
    for workload in dict.fromkeys(w for w, _ in cells):  # one bench per workload: only the loads asked for
        loads = tuple(load for w, load in cells if w == workload)
        config = BenchConfig(
            tuple(args.agents), (workload,), loads, args.seeds, horizon=args.horizon, reference=reference
        )
        results.update(run_grid(config, args.bench_dir / workload, args.jobs))
        if reference and "mara" in args.agents:
            diffs.update(paired_diffs(args.bench_dir / workload))
    note = (
        f"Completion rate, mean ± 95% CI over seeds 0..{args.seeds - 1}; 8 nodes, 16 rows, {args.horizon} slots, "
        f"Poisson arrivals, test-split curves; the last column is MARA minus LARA per seed, in percentage points. "
        f"{time.perf_counter() - start:.0f} s."
    )
    write_report(args.out, report(results, diffs, args.agents, cells, note), results)


if __name__ == "__main__":
    main()
