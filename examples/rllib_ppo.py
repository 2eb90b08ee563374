"""Train multi-agent PPO with action masking on RLlib, then rank the policy beside the baselines.

    python examples/rllib_ppo.py --iterations 20                       # a local Ray on this machine
    python examples/rllib_ppo.py --address auto --num-env-runners 8    # a running Ray cluster

One policy is shared by every node and acts turn after turn through the AEC env, with masked
actions' logits set to -inf (``mara_agents.rllib``), so it never samples a masked action. On a
cluster, every node needs this package installed (``pip install "mara-sched[rllib]"``); the env runners
sample there and the driver learns. After training, the policy plays the test curves through
``mara_agents.evaluate`` beside ``edf`` and ``lara``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--iterations", type=int, default=20, help="PPO iterations (one batch each)")
    parser.add_argument("--train-batch-size", type=int, default=4000, help="node turns per iteration")
    parser.add_argument("--minibatch-size", type=int, default=256)
    parser.add_argument("--num-epochs", type=int, default=4)
    parser.add_argument("--num-env-runners", type=int, default=0, help="Ray workers sampling (0: the driver)")
    parser.add_argument("--address", default=None, help="Ray cluster address (e.g. auto); default: a local Ray")
    parser.add_argument("--num-nodes", type=int, default=4)
    parser.add_argument("--horizon", type=int, default=200)
    parser.add_argument("--seeds", type=int, default=10, help="evaluation episodes per scheduler")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--checkpoint", type=Path, default=None, help="save RLlib's checkpoint here (pickles)")
    parser.add_argument(
        "--torch-threads",
        type=int,
        default=1,
        help="torch threads of this process, which learns (and samples with --num-env-runners 0); "
        "one was 6x faster than torch's default on a busy 2-core machine",
    )
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    import ray
    import torch

    torch.set_num_threads(args.torch_threads)  # an entry point: it owns the process's thread count

    import mara_agents
    from mara_agents.cli import format_table
    from mara_agents.rllib import POLICY_ID, RLlibScheduler, ppo_config

    env_kwargs = {"num_nodes": args.num_nodes, "horizon": args.horizon, "forecaster": "none", "shaping": True}
    ray.init(address=args.address, include_dashboard=False)
    try:
        config = ppo_config(
            env_kwargs,
            train_batch_size=args.train_batch_size,
            minibatch_size=args.minibatch_size,
            num_epochs=args.num_epochs,
            num_env_runners=args.num_env_runners,
            seed=args.seed,
        )
        algo = config.build_algo()
        for i in range(args.iterations):
            start = time.perf_counter()
            result = algo.train()
            runners = result["env_runners"]
            # Every node receives the team reward, so any node's return is the team return.
            per_node = list(runners.get("agent_episode_returns_mean", {}).values())
            team = sum(per_node) / len(per_node) if per_node else float("nan")
            print(
                f"iteration {i + 1}: {runners['num_env_steps_sampled_lifetime']:.0f} node turns, "
                f"team return per episode {team:.2f}, {time.perf_counter() - start:.1f} s",
                flush=True,
            )
        if args.checkpoint is not None:
            algo.save_to_path(str(args.checkpoint.resolve()))
        scheduler = RLlibScheduler(algo.get_module(POLICY_ID), trained_env=env_kwargs)
        algo.stop()
    finally:
        ray.shutdown()

    eval_kwargs = {"num_nodes": args.num_nodes, "horizon": args.horizon, "forecaster": "none"}
    seeds = range(args.seeds)
    summaries = {"rllib_ppo": mara_agents.summarize(mara_agents.evaluate(scheduler, seeds, **eval_kwargs))}
    for name in ("edf", "lara"):
        summaries[name] = mara_agents.summarize(mara_agents.evaluate(name, seeds, **eval_kwargs))
    print(format_table(summaries))


if __name__ == "__main__":
    main()
