"""Fit a generalist MARA checkpoint's selector: per slot, its learned gate or one planner's path alone.

    python examples/fit_selector.py --out runs/selector                      # the shipped generalist
    python examples/fit_selector.py --checkpoint runs/mara_generalist/checkpoint.pt --out runs/selector
    python examples/fit_selector.py --plays runs/selector/plays.npz --out runs/selector_refit  # no replay

Plays every option (learned gate, ``srw``, ``edf``, ``uniform`` path alone) on ``--scenarios`` training
scenarios (training curves, 2-64 nodes, every workload, loads 0.7-3.5, Poisson, bursty and diurnal
arrivals, some heterogeneous and faulty clusters; seeds no evaluation plays), then fits the selector on
all but the held-out share and reports both parts (``mara_agents.mara.selector``). Writes into
``--out``: ``plays.npz`` (the plays, to refit without replaying), ``checkpoint.pt`` (the network
with its fitted selector; everything else unchanged) and ``report.md``. Judge the result on test
curves with ``benchmarks/mara_select.py`` and ``benchmarks/generalisation.py``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from mara_agents.mara.checkpoint import load_checkpoint, save_checkpoint
from mara_agents.mara.scheduler import GENERALIST_CHECKPOINT
from mara_agents.mara.selector import OptionPlays, choice_report, fit_selector, play_options
from mara_agents.stats import format_table


def save_plays(plays: OptionPlays, path: Path) -> None:
    arrays = {"outcomes": plays.outcomes, "features": plays.features, "scenario": plays.scenario}
    np.savez_compressed(path, **arrays, settings=np.array(json.dumps(plays.settings)))


def load_plays(path: Path) -> OptionPlays:
    """Plays saved by :func:`save_plays` (no pickles: arrays and one JSON string)."""
    with np.load(path, allow_pickle=False) as blob:
        missing = {"outcomes", "features", "scenario", "settings"} - set(blob.files)
        if missing:
            raise ValueError(f"{path}: not a plays file of fit_selector.py (missing {sorted(missing)})")
        settings = json.loads(str(blob["settings"]))
        return OptionPlays(blob["outcomes"], blob["features"], blob["scenario"], settings)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checkpoint", type=Path, default=GENERALIST_CHECKPOINT, help="a hinted generalist")
    parser.add_argument("--scenarios", type=int, default=200, help="training scenarios to play every option on")
    parser.add_argument("--held-out", type=float, default=0.2, help="share of the scenarios kept out of the fit")
    parser.add_argument("--plays", type=Path, help="reuse a plays.npz of an earlier run instead of playing")
    parser.add_argument("--steps", type=int, default=400, help="full-batch optimiser steps of the fit")
    parser.add_argument("--weight-decay", type=float, default=1e-3, help="AdamW weight decay of the fit")
    parser.add_argument("--jobs", type=int, default=2, help="processes for the plays")
    parser.add_argument("--out", type=Path, required=True, help="directory to write into (created)")
    args = parser.parse_args()
    if args.scenarios < 2 or args.jobs < 1 or args.steps < 1 or not 0.0 < args.held_out < 1.0:
        parser.error("--scenarios must be >= 2, --jobs and --steps >= 1, and --held-out in (0, 1)")
    for name in ("checkpoint", "plays"):
        path = getattr(args, name)
        if path is not None and not path.is_file():
            parser.error(f"--{name} {path}: no such file")
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
    plays = load_plays(args.plays) if args.plays else play_options(args.checkpoint, args.scenarios, jobs=args.jobs)
    played = time.perf_counter() - start
    if not args.plays:
        save_plays(plays, args.out / "plays.npz")
    count = len(plays.outcomes)
    held = np.arange(count - max(1, round(args.held_out * count)), count)  # the last scenarios: a fixed split
    fitting = np.arange(held[0])
    fitted = fit_selector(net, plays.subset(fitting), steps=args.steps, weight_decay=args.weight_decay)
    reports = {
        "fit": choice_report(fitted, plays.subset(fitting)),
        "held out": choice_report(fitted, plays.subset(held)),
    }
    note = {"checkpoint": source, "scenarios": count, "held_out": len(held), "steps": args.steps}
    save_checkpoint(fitted, args.out / "checkpoint.pt", env, {**extra, "selector_fit": json.dumps(note)})
    header = ["part", "scenarios", *reports["fit"]]
    rows = [
        [part, str(len(ids)), *(f"{v:.3f}" for v in reports[part].values())]
        for part, ids in (("fit", fitting), ("held out", held))
    ]
    text = (
        f"# Selector fit of `{source}`\n\n`python examples/fit_selector.py {' '.join(sys.argv[1:])}`: "
        f"{count} training scenarios, the last {len(held)} held out; plays {played:.0f} s, fit and report "
        f"{time.perf_counter() - start - played:.0f} s. Mean completion of each option alone, the best "
        f"single option, the per-scenario best (a ceiling), and the selector's choice weighing the options' "
        f"completions (the real play mixes the paths: judge it with benchmarks/mara_select.py).\n\n"
        + format_table(header, rows)
        + "\n"
    )
    (args.out / "report.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
