"""Train one MaskablePPO policy (sb3-contrib) shared by all nodes, then rank it beside the baselines.

    python examples/sb3_maskable_ppo.py --timesteps 50000 --seeds 10

Every step is one node's turn (``mara_env.node_turns.NodeTurnEnv``); the policy sees the acting
node's observation and its action mask, so it never plays a masked action. The trained policy is
saved with ``mara_agents.sb3.save_policy`` (tensors only), reloaded safely, and evaluated with the
project's runner on test curves beside ``edf`` and ``lara``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import mara_agents
from mara_agents.cli import format_table
from mara_agents.sb3 import load_policy, save_policy
from mara_env.node_turns import NodeTurnEnv


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--timesteps", type=int, default=50_000, help="node turns to train on")
    parser.add_argument("--seeds", type=int, default=10, help="evaluation episodes per scheduler")
    parser.add_argument("--num-nodes", type=int, default=4)
    parser.add_argument("--horizon", type=int, default=200)
    parser.add_argument("--out", type=Path, default=Path("runs/maskable_ppo.pt"))
    args = parser.parse_args()

    from sb3_contrib import MaskablePPO

    env_kwargs = {"num_nodes": args.num_nodes, "horizon": args.horizon, "forecaster": "none", "shaping": True}
    model = MaskablePPO("MlpPolicy", NodeTurnEnv(**env_kwargs), n_steps=256, batch_size=64, seed=0, device="cpu")
    model.learn(total_timesteps=args.timesteps)
    save_policy(model, args.out, env_kwargs)
    scheduler = load_policy(args.out)

    eval_kwargs = {"num_nodes": args.num_nodes, "horizon": args.horizon, "forecaster": "none"}
    seeds = range(args.seeds)
    summaries = {"maskable_ppo": mara_agents.summarize(mara_agents.evaluate(scheduler, seeds, **eval_kwargs))}
    for name in ("edf", "lara"):
        summaries[name] = mara_agents.summarize(mara_agents.evaluate(name, seeds, **eval_kwargs))
    print(format_table(summaries))


if __name__ == "__main__":
    main()
