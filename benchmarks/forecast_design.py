"""Design choices of the flow forecaster, measured on families it was not trained on (``vision``, ``rl``).

    python benchmarks/forecast_design.py --dir runs/design --steps 5000 --out docs/results/forecast_design

Each variant is trained on every bank except the development families ``vision`` and ``rl`` (which
are not among the new families the acceptance holds out, so the choice is not made on them), then
scored on cases from all their curves, with its calibration off, widening only, and shift plus
widening. Writes ``OUT.json`` and ``OUT.md``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import torch

from mara_env.forecast import FlowForecaster
from mara_env.forecast.evaluation import make_cases, score, write_report
from mara_env.forecast.flow_net import load_flow_net
from mara_env.forecast.train import resolve_banks, train
from mara_env.workloads.recorded import RecordedWorkload

DEV = ("vision", "rl")
VARIANTS = {
    "plain": {"augment_strength": 0.0},
    "augmented": {"augment_strength": 1.0},
    "augmented_wide": {"augment_strength": 1.0, "wide": True},
    "augmented_wide_embed128": {"augment_strength": 1.0, "wide": True, "embed": 128},
    "augmented_wide_embed128_15k": {"augment_strength": 1.0, "wide": True, "embed": 128, "steps": 15000},
    "synthetic_third_plain_12k": {"augment_strength": 0.0, "synthetic_share": 0.34, "steps": 12000},
    "synthetic_third_augmented_12k": {"augment_strength": 1.0, "synthetic_share": 0.34, "steps": 12000},
}
PREFIXES = (0.1, 0.25, 0.5)


def calibrations(net) -> dict:
    fitted = net.calibration
    return {"raw": None, "widen": fitted, "shift+widen": fitted["with_shift"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", type=Path, default=Path("runs/design"))
    parser.add_argument("--steps", type=int, default=5000)
    parser.add_argument("--tasks", type=int, default=300)
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS))
    parser.add_argument("--out", type=Path, default=Path("docs/results/forecast_design"))
    args = parser.parse_args()
    torch.set_num_threads(1)
    banks = resolve_banks(["all"], exclude=DEV)
    cases = {(fam, p): make_cases(RecordedWorkload(fam, "all"), p, args.tasks, seed=0) for fam in DEV for p in PREFIXES}
    rows = []
    for variant in args.variants:
        path = args.dir / f"flow_{variant}.pt"
        if not path.is_file():
            settings = {"steps": args.steps, **VARIANTS[variant]}
            train(banks, batch=256, lr=2e-3, seed=0, out=path, progress=False, **settings)
        net = load_flow_net(path)
        for cal_name, cal in calibrations(net).items():
            forecaster = FlowForecaster.from_net(net, calibration=cal)
            for (fam, prefix), (histories, targets, truth) in cases.items():
                row = score(forecaster, histories, targets, truth)
                rows.append({"variant": variant, "calibration": cal_name, "workload": fam, "prefix": prefix, **row})
            mine = [r for r in rows if r["variant"] == variant and r["calibration"] == cal_name]
            err = np.mean([r["median_abs_log_ratio"] for r in mine])
            cov = [r["coverage"] for r in mine]
            print(f"{variant:>10} {cal_name:>12}: error {err:.3f}, coverage {min(cov):.2f}-{max(cov):.2f}", flush=True)
    lines = [
        "| variant | calibration | family | error (mean of 3 prefixes) | coverage min-max | bias |",
        "|---|---|---|---|---|---|",
    ]
    for variant in args.variants:
        for cal_name in ("raw", "widen", "shift+widen"):
            for fam in DEV:
                mine = [r for r in rows if (r["variant"], r["calibration"], r["workload"]) == (variant, cal_name, fam)]
                err = np.mean([r["median_abs_log_ratio"] for r in mine])
                bias = np.mean([r["median_log_bias"] for r in mine])
                cov = [r["coverage"] for r in mine]
                lines.append(
                    f"| {variant} | {cal_name} | {fam} | {err:.3f} | {min(cov):.2f}-{max(cov):.2f} | {bias:+.2f} |"
                )
    write_report(args.out, "\n".join(lines), rows)


if __name__ == "__main__":
    main()
