"""How often a generalist's greedy action matches its teacher's, by cluster size, on teacher-played episodes.

    python benchmarks/mara_agreement.py --out docs/results/mara_agreement
    python benchmarks/mara_agreement.py --checkpoint runs/mara_generalist/checkpoint.pt --teacher best_shared
    python benchmarks/mara_agreement.py --teacher "best_shared+edf_uniform~tabular,2,0.7" --workloads tabular \
        --sizes 8 --loads train extreme --seeds 3   # a corner's teacher, split by the rule it plays

The teacher (``best`` by default: whichever of ``srw`` and ``edf`` completes more of the episode) plays
whole validation episodes; at every live node turn the generalist is asked for its greedy action on
the same observation, so its choices never steer the episode. The report gives, per workload and
``M``, the planner the teacher chose and the share of turns where the two agree. Cloning accuracy
mixes all scenarios into one number; this splits it where the generalist falls behind (big clusters).
``--teacher`` takes any teacher spec of ``train_mara.py`` (``best_shared+AGENT``, corners included), and
the agreement is also split by the rule the teacher's label followed (``Teacher.path``: ``srw``, ``edf``
or ``uniform``; ``edf_uniform`` names the rule of each decision), so a student that clones one rule and
blends another shows it.
"""

from __future__ import annotations

import argparse
import time
from collections import Counter
from pathlib import Path

import mara_agents
import mara_env
from mara_agents.base import Scheduler
from mara_agents.mara.gate_paths import GATE_PATHS
from mara_agents.mara.scenarios import VALIDATION_SEED
from mara_agents.mara.teacher import Teacher, candidate_name, parse_teacher
from mara_agents.stats import format_table
from mara_env.env import live_turns
from mara_env.forecast.evaluation import write_report


def agreement(
    workload: str, nodes: int, seed: int, horizon: int, teacher: str, student: Scheduler, load: str = "train"
) -> dict:
    """The teacher's planner, its turns, and the share where ``student``'s greedy action is the teacher's,
    over all turns and per rule the teacher's label followed (``turns PATH``, ``agree PATH``)."""
    settings = {
        "num_nodes": nodes,
        "max_tasks": max(16, 2 * nodes),
        "workload": workload,
        "load": load,
        "curve_split": "val",
        "horizon": horizon,
        "forecaster": student.requirements.forecaster,
    }
    env = mara_env.raw_env(**settings)
    guide = Teacher.for_env(teacher, settings)
    env.reset(seed=seed)
    guide.reset(seed)
    student.reset(seed)
    tally = PathTally()
    for agent in live_turns(env):
        observation = env.observe(agent)
        label = guide.action(env, observation)
        tally.add(guide.path(), student.act(observation, agent) == label)
        env.step(label)
    return {"planner": candidate_name(guide.chosen), **tally.summary()}


class PathTally:
    """Turns and agreeing turns, in all and per rule of ``GATE_PATHS`` (a path index, -1: none of them)."""

    def __init__(self) -> None:
        self.turns, self.same = Counter(), Counter()

    def add(self, path: int, agreed: bool) -> None:
        for key in ["all", GATE_PATHS[path]] if path >= 0 else ["all"]:
            self.turns[key] += 1
            self.same[key] += int(agreed)

    def summary(self) -> dict:
        """``turns``, ``agreement`` and per rule ``turns PATH`` and ``agree PATH`` (NaN without turns)."""
        share = {
            key: self.same[key] / self.turns[key] if self.turns[key] else float("nan") for key in ("all", *GATE_PATHS)
        }
        out = {"turns": self.turns["all"], "agreement": share["all"]}
        for path in GATE_PATHS:
            out |= {f"turns {path}": self.turns[path], f"agree {path}": share[path]}
        return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workloads", nargs="+", default=["synthetic", "rl", "tabular"])
    parser.add_argument("--sizes", nargs="+", type=int, default=[4, 8, 32, 64])
    parser.add_argument("--horizon", type=int, default=150)
    parser.add_argument("--loads", nargs="+", default=["train"], help="load presets (train, heavy, extreme)")
    parser.add_argument("--seeds", type=int, default=1, help="validation episodes per cell (from the first seed)")
    parser.add_argument("--teacher", default="best", help="a teacher spec as train_mara.py's (default: best)")
    parser.add_argument("--checkpoint", help="a generalist MARA checkpoint instead of the shipped one")
    parser.add_argument("--out", type=Path, default=Path("runs/mara_agreement"))
    args = parser.parse_args()
    try:
        parse_teacher(args.teacher)
    except ValueError as error:
        parser.error(f"--teacher: {error}")
    if args.seeds < 1:
        parser.error("--seeds must be >= 1")
    start = time.perf_counter()
    rows, records = [], {}
    cells = [(w, load, m) for w in args.workloads for load in args.loads for m in args.sizes]
    for workload, load, nodes in cells:
        seeds = range(VALIDATION_SEED, VALIDATION_SEED + args.seeds)
        student = mara_agents.make("mara_generalist", **({"checkpoint": args.checkpoint} if args.checkpoint else {}))
        played = [agreement(workload, nodes, s, args.horizon, args.teacher, student, load) for s in seeds]
        records[f"{workload}/{load}/M{nodes}"] = played
        rows.append([workload, load, str(nodes), *summary_row(played)])
    which = f"`{args.checkpoint}`" if args.checkpoint else "the shipped `mara_generalist`"
    note = (
        f"Greedy actions of {which} against the `{args.teacher}` teacher's on the teacher's own episodes "
        f"(validation seeds from {VALIDATION_SEED:,}, {args.seeds} per cell, `val` curves, {args.horizon} slots, "
        f"K_max = max(16, 2M)); per rule: the turns whose label followed it; {time.perf_counter() - start:.0f} s."
    )
    per_path = [f"{name} {path}" for path in GATE_PATHS for name in ("turns", "agree")]
    table = format_table(["workload", "load", "M", "teacher plays", "turns", "agreement", *per_path], rows)
    write_report(args.out, note + "\n\n" + table + "\n", records)


def summary_row(played: list[dict]) -> list[str]:
    """A cell's columns over its episodes: the planners the teacher chose, turns, and the agreement in all
    and per rule (turn-weighted; '-' for a rule with no turn)."""
    planners = ", ".join(sorted({record["planner"] for record in played}))
    out = [planners]
    for turns_key, agree_key in [("turns", "agreement")] + [(f"turns {p}", f"agree {p}") for p in GATE_PATHS]:
        turns = sum(record[turns_key] for record in played)
        same = sum(record[agree_key] * record[turns_key] for record in played if record[turns_key])
        out += [str(turns), f"{same / turns:.3f}" if turns else "-"]
    return out


if __name__ == "__main__":
    main()
