"""Flow weights side by side on test splits, averaged over several case seeds (the noise of one seed
is large on the small test splits).

    python benchmarks/forecast_compare.py --weights shipped runs/flow/flow.pt --workloads synthetic vision rl \
        --seeds 0 1 2 --out docs/results/forecast_compare

Per workload and prefix: median absolute log ratio and p10-p90 coverage, each the mean over the seeds
(300 tasks per seed, the cases of ``mara forecast-eval``). ``shipped`` = the packaged weights.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import torch

from mara_env.forecast import FlowForecaster
from mara_env.forecast.evaluation import make_cases, score, write_report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--weights", nargs="+", default=["shipped"])
    parser.add_argument("--workloads", nargs="+", default=["synthetic", "vision", "rl"])
    parser.add_argument("--prefixes", nargs="+", type=float, default=[0.1, 0.25, 0.5])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--tasks", type=int, default=300)
    parser.add_argument("--out", type=Path, default=Path("docs/results/forecast_compare"))
    args = parser.parse_args()
    torch.set_num_threads(1)
    forecasters = {w: FlowForecaster() if w == "shipped" else FlowForecaster(weights=w) for w in args.weights}
    rows = []
    for workload in args.workloads:
        for prefix in args.prefixes:
            cases = [make_cases(workload, prefix, args.tasks, seed) for seed in args.seeds]
            for name, forecaster in forecasters.items():
                scores = [score(forecaster, *case) for case in cases]
                rows.append(
                    {
                        "workload": workload,
                        "prefix": prefix,
                        "weights": name,
                        "median_abs_log_ratio": float(np.mean([s["median_abs_log_ratio"] for s in scores])),
                        "coverage": float(np.mean([s["coverage"] for s in scores])),
                        "per_seed": [s["median_abs_log_ratio"] for s in scores],
                    }
                )
    head = "| workload | prefix | " + " | ".join(f"{w} error / coverage" for w in args.weights) + " |"
    lines = [head, "|---|---|" + "---|" * len(args.weights)]
    for workload in args.workloads:
        for prefix in [*args.prefixes, "mean"]:
            mine = [r for r in rows if r["workload"] == workload and (prefix == "mean" or r["prefix"] == prefix)]
            cells = []
            for w in args.weights:
                sel = [r for r in mine if r["weights"] == w]
                err, cov = np.mean([r["median_abs_log_ratio"] for r in sel]), np.mean([r["coverage"] for r in sel])
                cells.append(f"{err:.3f} / {cov:.2f}")
            label = "mean" if prefix == "mean" else f"{prefix:.0%}"
            lines.append(f"| {workload} | {label} | " + " | ".join(cells) + " |")
    write_report(args.out, "\n".join(lines), rows)


if __name__ == "__main__":
    main()
