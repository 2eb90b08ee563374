"""Write a small synthetic job trace in the documented CSV format (a diurnal submission pattern).

    python examples/traces/make_example_trace.py --out examples/traces/example_trace.csv
    python examples/traces/make_example_trace.py --jobs 3000 --days 7 --bursty --tail 1.3 \
        --out runs/traces/bursty_heavy.csv      # a bursty, heavy-tailed trace (benchmarks/generalisation.py)

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
    parser.add_argument("--bursty", action="store_true", help="submissions come in bursts (a job's followers)")
    parser.add_argument("--tail", type=float, help="Pareto shape of the durations (heavy-tailed; e.g. 1.3)")
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
    if args.bursty:  # each submission brings a burst of followers within ten minutes (a sweep, a team)
        followers = rng.geometric(0.25, size=len(times)) - 1
        times = [t + dt for t, n in zip(times, followers) for dt in [0.0, *rng.uniform(0, 600, size=n)]][: args.jobs]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["submit_time", "deadline", "model", "duration", "gpus"])
        for t in sorted(times):
            gpus = int(rng.choice([1, 2, 4]))
            if args.tail:  # Pareto: most jobs short, a few very long (capped at a week)
                duration = float(min(600 * (1 + rng.pareto(args.tail)), 7 * 86_400))
            else:
                duration = float(np.exp(rng.uniform(np.log(600), np.log(7_200))))
            deadline = t + duration * rng.uniform(1.5, 4.0)
            writer.writerow([round(t), round(deadline), rng.choice(MODELS), round(duration), gpus])
    print(f"wrote {args.out} ({args.jobs} jobs over {args.days} days)")


if __name__ == "__main__":
    main()
