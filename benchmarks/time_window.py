"""Does a generalist act outside the part of the episode it was trained on?

    python benchmarks/time_window.py mara_agents/mara/weights/mara_generalist.pt --out runs/time_window

With the warm-up (``ScenarioSampler.warmup``) a training episode on ``M`` nodes runs the full horizon,
a planner plays its first slots and the learner only the last ``turns_per_episode / M`` of them: at
32 nodes and 300 slots the last 75, so the observation's ``time`` (slot / horizon) is at least 0.75
on every turn the network was trained on. A test episode starts from an empty cluster at time 0, so
at big ``M`` most of its slots are slots of a kind the network never met.

This plays the checkpoint on ``mara_select``'s validation scenarios twice on the same episodes: as it
is, and with ``time`` raised to the window's first value wherever it is below (``1 - (turns_per_episode
/ M) / horizon`` from the checkpoint's own sampler; 0 where the learner played whole episodes, so
small clusters are untouched). If the clamped play completes more, the network's early-slot play at
that size is what its training never shaped. It is a diagnostic, not a scheduler: the clamp
also hides how far the episode has run.
"""

from __future__ import annotations

import argparse
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
from mara_select import SCENARIOS  # the sibling script (benchmarks/ is on sys.path)

from mara_agents.evaluation import evaluate
from mara_agents.mara.checkpoint import load_checkpoint
from mara_agents.mara.scenarios import VALIDATION_SEED
from mara_agents.mara.scheduler import MARAScheduler
from mara_agents.stats import format_table, paired_difference
from mara_env.forecast.evaluation import write_report
from mara_env.observation import layout_of

HORIZON = 300  # mara_select's episode length


class TimeFloor:
    """``scheduler`` seeing ``max(time, floor)`` as the observation's ``time`` (everything else as is)."""

    def __init__(self, scheduler: MARAScheduler, floor: float) -> None:
        self.scheduler, self.floor = scheduler, floor
        self.requirements = scheduler.requirements

    def reset(self, seed: int | None = None) -> None:
        self.scheduler.reset(seed)

    def act(self, observation: dict, agent: str) -> int:
        vector = np.array(observation["observation"], dtype=np.float32)
        layout = layout_of(vector)
        index = layout.slices["global"].start + layout.global_index["time"]
        vector[index] = max(vector[index], self.floor)
        return self.scheduler.act({"observation": vector, "action_mask": observation["action_mask"]}, agent)


def window_floor(sampler: dict, nodes: int) -> float:
    """The least ``time`` a training turn on ``nodes`` nodes had, for a checkpoint trained on ``sampler``
    (its config's ``scenarios``); 0 without the warm-up. Training and these episodes both run 300 slots."""
    if not sampler.get("warmup"):
        return 0.0
    learned = max(1, sampler["turns_per_episode"] // nodes)
    return max(0.0, 1.0 - learned / sampler["horizon"][1])


def _play(job: tuple[str, str, int, float]) -> tuple[str, int, float, float]:
    """One episode's completion rate as is and with the time floor."""
    checkpoint, scenario, seed, floor = job
    env = {**SCENARIOS[scenario], "curve_split": "val", "horizon": HORIZON}
    rates = [
        evaluate(agent, [seed], **env)[0]["completion_rate"]
        for agent in (MARAScheduler(checkpoint), TimeFloor(MARAScheduler(checkpoint), floor))
    ]
    return scenario, seed, float(rates[0]), float(rates[1])


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("checkpoint", help="a generalist checkpoint trained with the warm-up")
    parser.add_argument("--scenarios", nargs="+", default=list(SCENARIOS), choices=list(SCENARIOS))
    parser.add_argument("--seeds", type=int, default=8, help="validation seeds per scenario (default 8)")
    parser.add_argument("--jobs", type=int, default=1, help="processes (default 1)")
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("runs/time_window"),
        help="report: OUT.md and OUT.json (default runs/time_window)",
    )
    args = parser.parse_args()
    if not Path(args.checkpoint).is_file():
        parser.error(f"{args.checkpoint}: no such file (a generalist checkpoint)")
    if args.seeds < 1 or args.jobs < 1:
        parser.error(f"--seeds and --jobs must be >= 1, got {args.seeds} and {args.jobs}")
    sampler = load_checkpoint(Path(args.checkpoint))[2].get("config", {}).get("scenarios")
    if not sampler:
        parser.error(f"{args.checkpoint} was not trained on scenarios (a --generalist checkpoint is)")
    args.sampler = sampler
    return args


def main() -> None:
    args = parse_args()
    start = time.perf_counter()
    floors = {name: window_floor(args.sampler, SCENARIOS[name]["num_nodes"]) for name in args.scenarios}
    seeds = range(VALIDATION_SEED, VALIDATION_SEED + args.seeds)
    jobs = [(args.checkpoint, name, seed, floors[name]) for name in args.scenarios for seed in seeds]
    with ProcessPoolExecutor(args.jobs) as pool:
        played = list(pool.map(_play, jobs))
    rows, results = [], {}
    for name in args.scenarios:
        plain = [p for scenario, _, p, _ in played if scenario == name]
        clamped = [c for scenario, _, _, c in played if scenario == name]
        diff = paired_difference(clamped, plain)
        results[name] = {"floor": floors[name], "plain": plain, "clamped": clamped, "difference": diff}
        rows.append(
            [
                name,
                f"{floors[name]:.3f}",
                f"{np.mean(plain):.3f}",
                f"{np.mean(clamped):.3f}",
                f"{100 * diff['mean']:+.1f} ± {100 * diff['ci95']:.1f}",
            ]  # fmt: skip
        )
    header = ["scenario", "time floor", "as is", "time clamped", "clamped - as is, pp (paired)"]
    note = (
        f"`{args.checkpoint}` on `mara_select`'s validation episodes ({args.seeds} seeds per scenario from "
        f"{VALIDATION_SEED:,}, `val` curves, {HORIZON} slots), as is and with the observation's `time` raised to "
        f"the first value its training turns had at that size; {time.perf_counter() - start:.0f} s with "
        f"{args.jobs} process{'es' if args.jobs > 1 else ''}."
    )
    markdown = f"# Does the generalist act outside its training window?\n\n{note}\n\n{format_table(header, rows)}\n"
    write_report(args.out, markdown, results)  # printed too


if __name__ == "__main__":
    main()
