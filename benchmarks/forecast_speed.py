"""Time per forecast call: 32 tasks (and 32 samples per task for flow) on one CPU thread.

    python benchmarks/forecast_speed.py --tasks 32 --calls 200

Histories are real prefixes of synthetic test tasks (25% of their need observed).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from mara_env import forecast
from mara_env.forecast.evaluation import make_cases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", type=int, default=32)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--forecasters", nargs="+", default=["flow", "wls", "dkf"])
    parser.add_argument("--weights", help="flow weights file (default: the shipped one)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    histories, targets, _ = make_cases("synthetic", 0.25, args.tasks, seed=0)
    print(f"torch {torch.__version__}, 1 thread, {args.tasks} tasks per call, {args.calls} calls")
    for name in args.forecasters:
        f = forecast.make(name, weights=args.weights) if name == "flow" and args.weights else forecast.make(name)
        for _ in range(10):  # warm-up
            f.predict(histories, targets)
        times = []
        for _ in range(args.calls):
            start = time.perf_counter()
            f.predict(histories, targets)
            times.append(time.perf_counter() - start)
        ms = 1e3 * np.array(times)
        print(f"{name:>5}: median {np.median(ms):6.2f} ms per call, p90 {np.percentile(ms, 90):6.2f} ms")


if __name__ == "__main__":
    main()
