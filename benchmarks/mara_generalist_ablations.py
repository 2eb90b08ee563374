"""Ablations of the generalist MARA policy, measured where forecasts are hard.

    python benchmarks/mara_generalist_ablations.py \\
        --variants full=mara_agents/mara/weights/mara_generalist.pt wls=runs/abl_gen_wls/checkpoint.pt \\
        none=runs/abl_gen_none/checkpoint.pt --jobs 2 --out docs/results/mara_generalist_ablations.md

Each variant is a checkpoint trained by ``examples/train_mara.py --generalist`` with one change (for
example ``--forecaster wls``); the first is the reference. Every variant plays the same test seeds on
every workload x load x cluster size (``K_max = max(16, 2M)``; by default the workloads whose curves
forecasters find hardest: ``vision``, ``rl`` and real-curve families, at the ``train`` and ``heavy``
loads, 8 and 32 nodes). Per cell the report gives each variant's completion rate and its difference
to the reference paired by seed (95% t-interval), then each variant's mean difference over the cells
and the number of cells where it is significantly below or above. Each variant plays with the
forecaster it was trained on (a checkpoint carries its env settings).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from agents_by_preset import write_report  # the sibling scripts (benchmarks/ is on sys.path)
from generalisation import run_sizes

from mara_agents.stats import format_mean_ci, format_table, paired_difference

HARD_WORKLOADS = ["vision", "rl", "charlm", "wordlm", "tabular", "gbt"]


def parse_variant(text: str) -> tuple[str, str]:
    """``NAME=CHECKPOINT`` as ``(NAME, "mara:CHECKPOINT")``; ``ValueError`` names the expected form."""
    name, sep, path = text.partition("=")
    if not sep or not name or not path:
        raise ValueError(f"a variant is NAME=CHECKPOINT (e.g. wls=runs/abl_gen_wls/checkpoint.pt), got {text!r}")
    if not Path(path).is_file():
        raise ValueError(f"variant {name!r}: no checkpoint file at {path!r}")
    return name, f"mara:{path}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--variants", nargs="+", required=True, help="NAME=CHECKPOINT, the reference first")
    parser.add_argument("--workloads", nargs="+", default=HARD_WORKLOADS)
    parser.add_argument("--loads", nargs="+", default=["train", "heavy"])
    parser.add_argument("--sizes", nargs="+", type=int, default=[8, 32], help="cluster sizes M")
    parser.add_argument("--seeds", type=int, default=10, help="seeds per cell where M <= 8")
    parser.add_argument("--big-seeds", type=int, default=5, help="seeds per cell where M > 8")
    parser.add_argument("--horizon", type=int, default=300)
    parser.add_argument("--jobs", type=int, default=2, help="worker processes")
    parser.add_argument("--out", type=Path, help="writes OUT (markdown) and the records as JSON beside it")
    parser.add_argument("--bench-dir", type=Path, default=Path("runs/generalist_ablations"), help="run_bench's folders")
    args = parser.parse_args()
    try:
        variants = dict(parse_variant(text) for text in args.variants)
    except ValueError as error:
        parser.error(str(error))
    args.agents = list(variants.values())
    start = time.perf_counter()
    results = run_sizes(args)
    names, reference = list(variants), args.agents[0]
    rows, diffs = [], {name: [] for name in names[1:]}
    for workload, load, nodes in dict.fromkeys((w, load, m) for (_, w, load, m) in results):
        cell = {name: results[(variants[name], workload, load, nodes)] for name in names}
        rates = {name: [r["completion_rate"] for r in records] for name, records in cell.items()}
        row = [workload, load, str(nodes), f"{np.mean(rates[names[0]]):.3f}"]
        for name in names[1:]:
            diff = paired_difference(rates[name], rates[names[0]])
            diffs[name].append(diff)
            row.append(f"{np.mean(rates[name]):.3f} ({format_mean_ci(diff, digits=1, scale=100, signed=True)})")
        rows.append(row)
    summary = []
    for name, cells in diffs.items():
        below = sum(d["mean"] + d["ci95"] < 0 for d in cells)
        above = sum(d["mean"] - d["ci95"] > 0 for d in cells)
        mean = 100 * np.mean([d["mean"] for d in cells])
        summary.append(f"`{name}`: {mean:+.1f} pp on average; significantly below in {below}, above in {above}")
    note = (
        f"Reference `{names[0]}` = `{reference}`. Completion rate (mean over seeds; test-split curves, Poisson "
        f"arrivals, {args.horizon} slots, K_max = max(16, 2M), {args.seeds} seeds where M <= 8 and "
        f"{args.big_seeds} above); in brackets each variant's difference to the reference, paired by seed, in "
        f"percentage points (95% t-interval). Over the {len(rows)} cells: " + "; ".join(summary) + ". "
        f"{time.perf_counter() - start:.0f} s."
    )
    header = ["workload", "load", "M", names[0], *names[1:]]
    flat = {(a, f"{w}/M{m}", load): recs for (a, w, load, m), recs in results.items()}
    write_report(args.out, note + "\n\n" + format_table(header, rows) + "\n", flat)


if __name__ == "__main__":
    main()
