"""Where the generalist follows srw and where edf: its per-slot gate, by workload and cluster size.

    python benchmarks/mara_gate.py --out docs/results/mara_gate.md
    python benchmarks/mara_gate.py --checkpoint runs/mara_generalist/checkpoint.pt   # any hinted checkpoint

The hinted slot actor mixes two skip paths, one playing ``srw``'s rule and one ``edf``'s, with a gate
in [0, 1] read from the slot's encoding (1: all ``srw``). This plays the shipped ``mara_generalist``
on test-split episodes and reports the gate's mean and 10th/90th percentiles over the slots that
had a task, per workload and ``M``, beside which of ``srw`` and ``edf`` completes more there
(``docs/results/generalisation.md``). It reads the gate from the scheduler's ``slot_parts``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

import mara_agents
import mara_env
from mara_agents.evaluation import env_config
from mara_agents.stats import format_table
from mara_env.env import live_turns
from mara_env.forecast.evaluation import write_report


def gates(workload: str, nodes: int, seeds: list[int], horizon: int, checkpoint: str | None = None) -> list[float]:
    """The gate of every slot with at least one task, over ``seeds`` (the shipped generalist by default)."""
    policy = mara_agents.make("mara_generalist", **({"checkpoint": checkpoint} if checkpoint else {}))
    settings = {"num_nodes": nodes, "max_tasks": max(16, 2 * nodes), "workload": workload, "horizon": horizon}
    env = mara_env.raw_env(**env_config(policy, settings))
    values: list[float] = []
    for seed in seeds:
        env.reset(seed=seed)
        policy.reset(seed)
        last = None
        for agent in live_turns(env):
            observation = env.observe(agent)
            env.step(policy.act(observation, agent))
            encoding = policy.slot_parts  # made at the slot's first turn, shared by its nodes
            if encoding is not last:
                if observation["action_mask"][1:].any():  # a slot with a task to choose
                    values.append(encoding.gate)
                last = encoding
    return values


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workloads", nargs="+", default=["synthetic", "vision", "rl", "mixed", "charlm", "tabular"])
    parser.add_argument("--sizes", nargs="+", type=int, default=[4, 32])
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--horizon", type=int, default=150)
    parser.add_argument("--checkpoint", help="a hinted MARA checkpoint instead of the shipped generalist")
    parser.add_argument("--out", type=Path, default=Path("runs/mara_gate"))
    args = parser.parse_args()
    start = time.perf_counter()
    rows, records = [], {}
    for nodes in args.sizes:
        for workload in args.workloads:
            values = np.asarray(gates(workload, nodes, list(range(args.seeds)), args.horizon, args.checkpoint))
            records[f"{workload}/M{nodes}"] = values.tolist()
            p10, p90 = np.percentile(values, [10, 90])
            rows.append([workload, str(nodes), str(values.size), f"{values.mean():.2f}", f"{p10:.2f}", f"{p90:.2f}"])
    which = f"`{args.checkpoint}`" if args.checkpoint else "the shipped `mara_generalist`"
    note = (
        f"Gate of {which} (1 = the srw path, 0 = the edf path) over the slots with a "
        f"task; test-split curves, train load, seeds 0..{args.seeds - 1}, {args.horizon} slots, "
        f"K_max = max(16, 2M); {time.perf_counter() - start:.0f} s."
    )
    table = format_table(["workload", "M", "slots", "mean gate", "p10", "p90"], rows)
    write_report(args.out, note + "\n\n" + table + "\n", records)


if __name__ == "__main__":
    main()
