"""AEC node-turns per second of the env with the flow forecaster loaded from a given weights file.

    python benchmarks/forecast_env_speed.py --weights runs/flow/flow.pt --episodes 3

The same loop and settings as ``benchmarks/env_speed.py`` (M = 8, K_max = 32, 300 slots, masked
random actions, one torch thread), for weights that are not (yet) the shipped ones.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

import mara_env
from mara_env.forecast import FlowForecaster

sys.path.insert(0, str(Path(__file__).resolve().parent))
from env_speed import turns_per_second  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--weights", help="flow weights (default: the shipped ones)")
    parser.add_argument("--episodes", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.set_num_threads(1)
    forecaster = FlowForecaster(weights=args.weights)
    env = mara_env.env(num_nodes=8, max_tasks=32, horizon=300, forecaster=forecaster)
    turns_per_second(env, 1, args.seed)  # warm-up
    rate, turns = turns_per_second(env, args.episodes, args.seed)
    print(f"weights {args.weights or 'shipped'}: {rate:,.0f} node-turns/s over {turns} node-turns")


if __name__ == "__main__":
    main()
