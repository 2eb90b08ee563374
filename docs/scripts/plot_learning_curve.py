"""Plot a MARA training log: completion rate against node turns, beside lara's.

python docs/scripts/plot_learning_curve.py runs/mara/log.csv --out docs/img/mara_learning_curve.png \
    --reference "srw (teacher)=0.70"

The warm start's evaluation (``--warm-start``, by default ``warm_start.json`` beside the log, if there)
is drawn at 0 turns.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("log", type=Path)
    parser.add_argument("--out", type=Path, default=Path("docs/img/mara_learning_curve.png"))
    parser.add_argument("--warm-start", type=Path, help="the run's warm_start.json")
    parser.add_argument("--reference", action="append", default=[], help="NAME=RATE, a horizontal line")
    args = parser.parse_args()
    rows = list(csv.DictReader(args.log.open()))
    turns = [int(r["turns"]) for r in rows]
    fig, ax = plt.subplots(figsize=(8, 3.2))
    ax.plot(turns, [float(r["train_completion_rate"]) for r in rows], lw=1, label="training episodes (sampled actions)")
    # the log repeats the latest evaluation on every row: keep the rows where a new one appeared
    evals, previous = [], None
    warm = args.warm_start or args.log.with_name("warm_start.json")
    if warm.is_file() and "eval_completion_rate" in json.loads(warm.read_text()):
        evals.append((0, json.loads(warm.read_text())["eval_completion_rate"]))
    for r in rows:
        value = float(r["eval_completion_rate"])
        if not math.isnan(value) and value != previous:
            evals.append((int(r["turns"]), value))
        previous = value
    ax.plot(*zip(*evals), "o-", label="held-out evaluation (greedy)")
    ax.axhline(float(rows[0]["lara_completion_rate"]), color="grey", ls="--", label="lara, same evaluation seeds")
    for reference, style in zip(args.reference, [":", "-.", (0, (1, 3))]):
        name, rate = reference.rsplit("=", 1)
        ax.axhline(float(rate), color="black", ls=style, lw=1, label=f"{name}, same evaluation seeds")
    ax.set_xlabel("node turns")
    ax.set_ylabel("completion rate")
    ax.set_ylim(0, 1)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(args.out, dpi=100)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
