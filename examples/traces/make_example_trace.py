"""Write a small synthetic job trace in the documented CSV format (a diurnal submission pattern).

    python examples/traces/make_example_trace.py --out examples/traces/example_trace.csv

It is made up (seeded), for trying trace replay: ``mara compare --arrivals examples/traces/example_trace.csv``.
Columns: submit_time and deadline in seconds, model, duration in seconds on ``gpus`` GPUs.
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

import numpy as np

MODELS = ("resnet18", "resnet50", "bert-base", "gpt2-small", "vit-tiny", "ppo-atari")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=120)
    parser.add_argument("--days", type=float, default=2.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("examples/traces/example_trace.csv"))
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    horizon = args.days * 86_400
    # thinning: accept a uniform time with probability following a day/night cycle (peak at 14:00)
    times = []
    while len(times) < args.jobs:
        t = rng.uniform(0, horizon)
        if rng.random() < 0.55 + 0.45 * np.cos(2 * np.pi * (t / 86_400 - 14 / 24)):
            times.append(t)
    with args.out.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["submit_time", "deadline", "model", "duration", "gpus"])
        for t in sorted(times):
            gpus = int(rng.choice([1, 2, 4]))
            duration = float(np.exp(rng.uniform(np.log(600), np.log(7_200))))
            deadline = t + duration * rng.uniform(1.5, 4.0)
            writer.writerow([round(t), round(deadline), rng.choice(MODELS), round(duration), gpus])
    print(f"wrote {args.out} ({args.jobs} jobs over {args.days} days)")


if __name__ == "__main__":
    main()
