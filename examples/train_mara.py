"""Train the MARA policy from scratch at the ``train`` load (PPO + GAE, parallel env copies).

    python examples/train_mara.py --quick          # a one-minute smoke run
    python examples/train_mara.py --out runs/mara  # the default configuration

Writes ``OUT/log.csv`` (and TensorBoard logs if TensorBoard is installed), ``OUT/checkpoint.pt``
(weights only) and ``OUT/config.json``. Work in progress: the default configuration's budget and its
results are being established (see docs/index.md).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from mara_agents.mara.ppo import PPOConfig, train


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="a one-minute smoke run on short episodes")
    parser.add_argument("--turns", type=int, help="total node turns (default: the config's)")
    parser.add_argument("--envs", type=int, default=4, help="env copies, one process each")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--eval-every", type=int, default=50, help="iterations between evaluations beside lara")
    parser.add_argument("--out", type=Path, default=Path("runs/mara"))
    args = parser.parse_args()
    config = PPOConfig(num_envs=args.envs, seed=args.seed, eval_every=args.eval_every)
    if args.quick:
        config.total_turns, config.rollout_turns, config.eval_every, config.eval_seeds = 4096, 256, 2, 1
        config.env.update(horizon=60, num_nodes=4)
    if args.turns:
        config.total_turns = args.turns
    result = train(config, args.out)
    last = result["history"][-1]
    print(
        f"{last['turns']} turns in {result['seconds']:.0f} s; recent training completion rate "
        f"{last['train_completion_rate']:.3f}; checkpoint {args.out / 'checkpoint.pt'}"
    )


if __name__ == "__main__":
    main()
