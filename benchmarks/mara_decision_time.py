"""Decision time of the MARA policy: all nodes of one slot, one CPU thread.

    python benchmarks/mara_decision_time.py --slots 200                       # shipped policy, M=8, K=32
    python benchmarks/mara_decision_time.py --architecture slot --num-nodes 64 --max-tasks 128
    python benchmarks/mara_decision_time.py --checkpoint runs/mara_generalist/checkpoint.pt --num-nodes 64
    python benchmarks/mara_decision_time.py --checkpoint CKPT --num-nodes 64 --max-tasks 128 --workload rl --load heavy

Plays an episode and times, for every slot, the policy's ``act`` calls of all its nodes (observation
building by the env is not included; the env's own speed is in benchmarks/env_speed.py). Reports the
median and the 95th percentile per slot in ms, and node decisions per second. ``--architecture``
times an untrained network of that actor (``joint`` or ``slot``; time does not depend on the weights)
instead of the shipped policy (``--hints``: the slot actor with planner hints); ``--checkpoint`` times
a trained one. The turn head's cost grows with the rows present, so ``--workload`` and ``--load`` pick
the episode (the default, ``synthetic`` at the ``train`` load, keeps a 64-node table sparse; ``rl`` at
``heavy`` fills it).

"One thread" covers numpy too: the slot actor runs in numpy, whose BLAS (OpenBLAS) would otherwise
split larger products over every core. ``--blas-threads`` sets its thread count before numpy loads.
"""

from __future__ import annotations

import argparse
import os
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--slots", type=int, default=200, help="slots to time")
    parser.add_argument("--num-nodes", type=int, default=8)
    parser.add_argument("--max-tasks", type=int, default=32)
    parser.add_argument("--workload", default="synthetic", help="the episode's workload (a fuller table costs more)")
    parser.add_argument("--load", default="train", help="the episode's load: a preset name or a number")
    parser.add_argument("--architecture", choices=["joint", "slot"], help="an untrained actor instead of the shipped")
    parser.add_argument("--hints", action="store_true", help="with --architecture slot: the actor reads the srw plan")
    parser.add_argument("--checkpoint", help="a trained MARA checkpoint instead of the shipped")
    parser.add_argument("--blas-threads", type=int, default=1, help="numpy's BLAS threads (default 1)")
    args = parser.parse_args()
    for variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[variable] = str(args.blas_threads)  # read when numpy's BLAS loads, below
    time_decisions(args)


def time_decisions(args: argparse.Namespace) -> None:
    import numpy as np
    import torch

    import mara_agents
    import mara_env
    from mara_agents.bench.cells import load_value
    from mara_agents.evaluation import env_config
    from mara_agents.mara.checkpoint import build
    from mara_agents.mara.scheduler import MARAScheduler
    from mara_env.env import live_turns

    torch.set_num_threads(1)
    if args.architecture is None:
        policy = mara_agents.make("mara", **({"checkpoint": args.checkpoint} if args.checkpoint else {}))
    else:
        torch.manual_seed(0)
        size = {"history_window": 8, "width": 64, "layers": 2, "heads": 4}
        net = build({"architecture": args.architecture, **size, "planner_hints": args.hints})
        policy = MARAScheduler(net.eval(), trained_env={"forecaster": "flow"})
    env = mara_env.raw_env(
        **env_config(
            policy,
            {
                "num_nodes": args.num_nodes,
                "max_tasks": args.max_tasks,
                "workload": args.workload,
                "load": load_value(args.load),
            },
        )
    )
    env.reset(seed=0)
    policy.reset(0)
    per_slot, elapsed = [], 0.0
    for agent in live_turns(env):
        observation = env.observe(agent)
        began = time.perf_counter()
        action = policy.act(observation, agent)
        elapsed += time.perf_counter() - began
        env.step(action)
        if env.agent_selection == env.possible_agents[0]:  # the slot is over
            per_slot.append(elapsed * 1000.0)
            elapsed = 0.0
            if len(per_slot) == args.slots:
                break
    times = np.asarray(per_slot[5:])  # the first slots warm up torch
    actor = args.checkpoint or (
        f"{args.architecture}{' with hints' if args.hints else ''}" if args.architecture else "shipped"
    )
    print(
        f"MARA ({actor}) decision time for all {args.num_nodes} nodes of a slot, K_max = {args.max_tasks}, "
        f"{args.workload} at the {args.load} load, one torch thread and {args.blas_threads} BLAS "
        f"thread(s): median {np.median(times):.2f} ms, p95 {np.percentile(times, 95):.2f} ms over {times.size} slots; "
        f"{1000.0 * args.num_nodes / times.mean():.0f} node decisions per second"
    )


if __name__ == "__main__":
    main()
