"""Leave-one-family-out and in-distribution forecast benchmark (issue 14's acceptance measures).

    python benchmarks/forecast_holdout.py --families all --dir runs/holdout --tasks 300 \
        --out docs/results/forecast_holdout

For each held-out family the flow trained without it (``runs/holdout/flow_without_NAME.pt``, trained
first if missing) is scored with ``wls`` and ``dkf`` on cases from every curve of that family. The
in-distribution table scores the given weights (default: the shipped ones) on the ``test`` split of
every workload. ``--fixed-weights`` scores one set of weights on every family instead (e.g. the
shipped ones, trained before these banks existed). Writes ``OUT.json`` (all rows) and ``OUT.md``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch

from mara_env.forecast import holdout
from mara_env.forecast.evaluation import benchmark, format_rows, write_report
from mara_env.forecast.flow import WEIGHTS
from mara_env.workloads.recorded import RECORDED_BANKS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--families", default="all", help="'all' (the new families) or one bank name")
    parser.add_argument("--dir", type=Path, default=holdout.DEFAULT_DIR)
    parser.add_argument("--tasks", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--prefixes", type=float, nargs="+", default=list(holdout.PREFIXES), help="fractions of the need observed"
    )
    parser.add_argument("--weights", type=Path, help="flow weights of the in-distribution table (default shipped)")
    parser.add_argument("--skip-in-distribution", action="store_true")
    parser.add_argument(
        "--fixed-weights", help="score these flow weights ('shipped' or a path) on every family instead of training"
    )
    parser.add_argument("--out", type=Path, default=Path("docs/results/forecast_holdout"))
    args = parser.parse_args()
    torch.set_num_threads(1)
    start = time.perf_counter()
    held = []
    for family in holdout.holdout_families(args.families):
        if args.fixed_weights:
            weights = WEIGHTS if args.fixed_weights == "shipped" else Path(args.fixed_weights)
        else:
            weights = holdout.weights_for(family, args.dir, progress=True)
        held += holdout.evaluate_family(family, weights, prefixes=args.prefixes, tasks=args.tasks, seed=args.seed)
        print(holdout.format_summary(holdout.summarise(held)), flush=True)
    inside = []
    if not args.skip_in_distribution:
        from mara_env.forecast import FORECASTERS, FlowForecaster

        if args.weights:  # score other weights under the name "flow"
            FORECASTERS["flow"] = lambda **kw: FlowForecaster(weights=args.weights, **kw)
        banks = ["synthetic", *RECORDED_BANKS]
        inside = benchmark(banks, ["flow", "wls", "dkf"], args.prefixes, tasks=args.tasks, seed=args.seed)
    payload = {"held_out": held, "in_distribution": inside, "seconds": round(time.perf_counter() - start, 1)}
    parts = ["## Held out (flow trained without the family)", holdout.format_summary(holdout.summarise(held))]
    parts += ["", format_rows(held)] if held else []
    if inside:
        parts += ["", "## In distribution (test splits)", holdout.format_summary(holdout.summarise(inside))]
        parts += ["", format_rows(inside)]
    write_report(args.out, "\n".join(parts), payload)


if __name__ == "__main__":
    main()
