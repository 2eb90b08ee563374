"""How often a generalist's greedy action matches its teacher's, by cluster size, on teacher-played episodes.

    python benchmarks/mara_agreement.py --out docs/results/mara_agreement
    python benchmarks/mara_agreement.py --checkpoint runs/mara_generalist/checkpoint.pt --teacher best_shared

The teacher (``best`` by default: whichever of ``srw`` and ``edf`` completes more of the episode) plays
whole validation episodes; at every live node turn the generalist is asked for its greedy action on
the same observation, so its choices never steer the episode. The report gives, per workload and
``M``, the planner the teacher chose and the share of turns where the two agree. Cloning accuracy
mixes all scenarios into one number; this splits it where the generalist falls behind (big clusters).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import mara_agents
import mara_env
from mara_agents.mara.teacher import TEACHERS, Teacher
from mara_agents.stats import format_table
from mara_env.env import live_turns
from mara_env.forecast.evaluation import write_report

VALIDATION_SEED = 10_000_000  # as benchmarks/mara_select.py: no training episode and no benchmark plays it


def agreement(workload: str, nodes: int, seed: int, horizon: int, teacher: str, checkpoint: str | None) -> dict:
    """The teacher's planner and the share of turns where the generalist's greedy action is the teacher's."""
    student = mara_agents.make("mara_generalist", **({"checkpoint": checkpoint} if checkpoint else {}))
    settings = {
        "num_nodes": nodes,
        "max_tasks": max(16, 2 * nodes),
        "workload": workload,
        "load": "train",
        "curve_split": "val",
        "horizon": horizon,
        "forecaster": student.requirements.forecaster,
    }
    env = mara_env.raw_env(**settings)
    guide = Teacher.for_env(teacher, settings)
    env.reset(seed=seed)
    guide.reset(seed)
    student.reset(seed)
    same = turns = 0
    for agent in live_turns(env):
        observation = env.observe(agent)
        label = guide.action(env, observation)
        same += int(student.act(observation, agent) == label)
        turns += 1
        env.step(label)
    return {"planner": guide.chosen, "turns": turns, "agreement": same / max(turns, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workloads", nargs="+", default=["synthetic", "rl", "tabular"])
    parser.add_argument("--sizes", nargs="+", type=int, default=[4, 8, 32, 64])
    parser.add_argument("--horizon", type=int, default=150)
    parser.add_argument("--teacher", default="best", choices=TEACHERS)
    parser.add_argument("--checkpoint", help="a generalist MARA checkpoint instead of the shipped one")
    parser.add_argument("--out", type=Path, default=Path("runs/mara_agreement"))
    args = parser.parse_args()
    start = time.perf_counter()
    rows, records = [], {}
    for workload in args.workloads:
        for nodes in args.sizes:
            record = agreement(workload, nodes, VALIDATION_SEED, args.horizon, args.teacher, args.checkpoint)
            records[f"{workload}/M{nodes}"] = record
            rows.append([workload, str(nodes), record["planner"], str(record["turns"]), f"{record['agreement']:.3f}"])
    which = f"`{args.checkpoint}`" if args.checkpoint else "the shipped `mara_generalist`"
    note = (
        f"Greedy actions of {which} against the `{args.teacher}` teacher's on the teacher's own episodes "
        f"(validation seed {VALIDATION_SEED:,}, `val` curves, train load, {args.horizon} slots, "
        f"K_max = max(16, 2M)); {time.perf_counter() - start:.0f} s."
    )
    table = format_table(["workload", "M", "teacher plays", "turns", "agreement"], rows)
    write_report(args.out, note + "\n\n" + table + "\n", records)


if __name__ == "__main__":
    main()
