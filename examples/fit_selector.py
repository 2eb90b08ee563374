"""Fit a generalist MARA checkpoint's selector: per slot, its learned gate or one planner's path alone.

    python examples/fit_selector.py --out runs/selector                      # the shipped generalist
    python examples/fit_selector.py --checkpoint runs/mara_generalist/checkpoint.pt --out runs/selector
    python examples/fit_selector.py --plays runs/selector/plays.npz --out runs/selector_refit  # no replay

Plays every option (learned gate, ``srw``, ``edf``, ``uniform`` path alone) on ``--scenarios`` training
scenarios (training curves, 2-64 nodes, every workload, loads 0.7-3.5, Poisson, bursty and diurnal
arrivals, some heterogeneous and faulty clusters; seeds no evaluation plays), cross-validates the fit
(``--folds``: each fold held out in turn) and fits the selector on all of them
(``mara_agents.mara.selector``). Writes into
``--out``: ``plays.npz`` (the plays, to refit without replaying), ``checkpoint.pt`` (the network
with its fitted selector; everything else unchanged) and ``report.md``. Judge the result on test
curves with ``benchmarks/mara_select.py`` and ``benchmarks/generalisation.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import replace
from pathlib import Path

# the play processes each run one episode at a time, --jobs of them at once: numpy's BLAS gets one
# thread in each, as in benchmarks/mara_select.py (set before numpy loads; a variable you set is kept)
for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

import numpy as np  # noqa: E402

from mara_agents.mara.checkpoint import load_checkpoint, save_checkpoint  # noqa: E402
from mara_agents.mara.scheduler import GENERALIST_CHECKPOINT  # noqa: E402
from mara_agents.mara.selector import (  # noqa: E402
    DEFAULT_SCENARIOS,
    OptionPlays,
    choice_report,
    cross_validate,
    fit_selector,
    play_options,
)
from mara_agents.stats import format_table  # noqa: E402


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checkpoint", type=Path, default=GENERALIST_CHECKPOINT, help="a hinted generalist")
    parser.add_argument("--scenarios", type=int, default=200, help="training scenarios to play every option on")
    parser.add_argument("--folds", type=int, default=5, help="cross-validation folds (each held out in turn)")
    parser.add_argument("--nodes", type=int, nargs=2, default=[2, 64], metavar=("LOW", "HIGH"), help="cluster sizes")
    parser.add_argument("--first-seed", type=int, default=0, help="scenario i plays seed SELECTOR_SEED_BASE + this + i")
    parser.add_argument("--plays", type=Path, nargs="+", help="reuse plays.npz files of earlier runs (no new plays)")
    parser.add_argument("--steps", type=int, default=400, help="full-batch optimiser steps of the fit")
    parser.add_argument("--weight-decay", type=float, default=1e-3, help="AdamW weight decay of the fit")
    parser.add_argument("--jobs", type=int, default=2, help="processes for the plays")
    parser.add_argument("--out", type=Path, required=True, help="directory to write into (created)")
    args = parser.parse_args()
    if args.scenarios < 2 or args.jobs < 1 or args.steps < 1 or args.folds < 2:
        parser.error("--scenarios and --folds must be >= 2, --jobs and --steps >= 1")
    if not 1 <= args.nodes[0] <= args.nodes[1] <= 128 or args.first_seed < 0:
        parser.error("--nodes needs 1 <= LOW <= HIGH <= 128 and --first-seed must be >= 0")
    for path in [args.checkpoint, *(args.plays or [])]:
        if not path.is_file():
            parser.error(f"{path}: no such file")
    return args


def main() -> None:
    args = parse_args()
    net, env, extra = load_checkpoint(args.checkpoint)
    if net.hint_embed is None:
        raise SystemExit(f"{args.checkpoint}: a selector needs a generalist with planner hints and pick hints")
    args.out.mkdir(parents=True, exist_ok=True)
    # the record names the shipped weights, not this machine's path to them
    source = "mara_generalist" if args.checkpoint.resolve() == GENERALIST_CHECKPOINT.resolve() else str(args.checkpoint)
    start = time.perf_counter()
    if args.plays:
        plays = OptionPlays.concatenate([OptionPlays.load(path) for path in args.plays])
    else:
        sampler = replace(DEFAULT_SCENARIOS, nodes=tuple(args.nodes))
        plays = play_options(args.checkpoint, args.scenarios, sampler, args.jobs, first_seed=args.first_seed)
    played = time.perf_counter() - start
    if not args.plays:
        plays.save(args.out / "plays.npz")
    count = len(plays.outcomes)
    if args.folds > count:
        raise SystemExit(f"--folds {args.folds} is more than the {count} scenarios played")
    fit = {"steps": args.steps, "weight_decay": args.weight_decay}
    folds = cross_validate(net, plays, args.folds, **fit)
    fitted = fit_selector(net, plays, **fit)
    rows = [[f"held-out fold {k}", *(f"{v:.3f}" for v in report.values())] for k, report in enumerate(folds)]
    mean = {key: float(np.mean([report[key] for report in folds])) for key in folds[0]}
    rows.append(["held-out mean", *(f"{v:.3f}" for v in mean.values())])
    rows.append(["all (fitted on)", *(f"{v:.3f}" for v in choice_report(fitted, plays).values())])
    gain = mean["selector"] - mean["learned"]
    note = {"checkpoint": source, "scenarios": count, "folds": args.folds, "held_out_gain": round(gain, 4), **fit}
    save_checkpoint(fitted, args.out / "checkpoint.pt", env, {**extra, "selector_fit": json.dumps(note)})
    text = (
        f"# Selector fit of `{source}`\n\n`python examples/fit_selector.py {' '.join(sys.argv[1:])}`: "
        f"{count} training scenarios, {args.folds}-fold cross-validation; plays {played:.0f} s, fits and "
        f"report {time.perf_counter() - start - played:.0f} s. Mean completion of each option alone, the best "
        f"single option, the per-scenario best (a ceiling), and the selector's choice weighing the options' "
        f"completions (the real play mixes the paths: judge it with benchmarks/mara_select.py). "
        f"**Held-out gain of the selector over the learned gate: {100 * gain:+.2f} points.**\n\n"
        + format_table(["scenarios", *folds[0]], rows)
        + "\n"
    )
    (args.out / "report.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
