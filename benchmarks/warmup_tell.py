"""Does the state a learner takes over tell the generalist's gate who played before it?

    python benchmarks/warmup_tell.py --checkpoint runs/mara_generalist/warm_start.pt --out runs/warmup_tell

Training episodes on big clusters start with warm-up slots played by a planner (``ScenarioSampler.warmup``);
by default that planner is the episode's teacher, the very candidate whose actions label the episode.
If the gate reads the label off the state that play leaves (which tasks run where, how often nodes
switched), it learns to carry on with whatever play it sees rather than to tell scenarios apart.

This draws training-like scenarios from one corner (``--workload``, at least ``--min-nodes`` nodes, a
load in ``--loads``; the default sampler otherwise, ``train`` curves, seeds no training or evaluation
plays), lets each planner of :data:`~mara_agents.mara.warmup.WARMUP_PLANNERS` play the warm-up of the
same episodes, and then lets the network play the rest. Per warm-up planner it reports the gate's mean
weight on each path over the network's slots and the completion rate. A gate that reads the scenario
gives about the same weights whoever warmed up; one that reads the warm-up follows it.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from mara_gate import PATHS, GateRecorder  # the sibling script (benchmarks/ is on sys.path)
from tqdm.auto import tqdm

from mara_agents.mara.scenarios import GENERALIST_MAX_ROWS, ScenarioFocus, ScenarioSampler, scenario_settings
from mara_agents.mara.warmup import WARMUP_PLANNERS, play_until
from mara_agents.registry import load_agent
from mara_agents.stats import format_table
from mara_env.env import live_turns, raw_env
from mara_env.forecast.evaluation import write_report
from mara_env.workloads import WORKLOADS

PROBE_SEED = 2_600_000_000  # above every training seed (mara_agents.mara.scenarios), apart from teacher_winners'
HEADER = ["warm-up by", "episodes", "network slots", *(f"w {p}" for p in PATHS), "completion"]


def play_after(planner: str, checkpoint: str, settings: dict, seed: int, slots: int) -> tuple[list, float]:
    """``planner`` plays the first ``slots`` slots of the episode, the network the rest: the gate's
    per-slot weights over the network's slots and the episode's completion rate."""
    env = raw_env(**settings)
    env.reset(seed=seed)
    warm = load_agent(planner)
    warm.reset(seed)
    play_until(env, warm, slots)
    recorder = GateRecorder(load_agent(f"mara_generalist:{checkpoint}"), {})
    recorder.reset(seed)
    for agent in live_turns(env):
        env.step(recorder.act(env.observe(agent), agent))
    return recorder.weights, float(env.sim.metrics()["completion_rate"])


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checkpoint", required=True, help="a hinted slot MARA checkpoint (e.g. RUN/warm_start.pt)")
    parser.add_argument("--workload", default="rl", choices=sorted(WORKLOADS))
    parser.add_argument("--min-nodes", type=int, default=24, help="fewest nodes of a scenario (default 24)")
    parser.add_argument("--loads", nargs=2, type=float, default=(2.1, 3.5), help="offered load range (default 2.1 3.5)")
    parser.add_argument("--episodes", type=int, default=4, help="scenarios, each played once per planner (default 4)")
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("runs/warmup_tell"),
        help="report: OUT.md and OUT.json (default runs/warmup_tell)",
    )
    args = parser.parse_args()
    if not Path(args.checkpoint).is_file():
        parser.error(f"--checkpoint {args.checkpoint}: no such file (a hinted MARA checkpoint)")
    if args.episodes < 1:
        parser.error(f"--episodes must be >= 1, got {args.episodes}")
    fixed = {"shaping": True, "forecaster": "flow_fixed", "curve_split": "train"}
    try:
        focus = ScenarioFocus(args.workload, args.min_nodes, tuple(args.loads), 1.0)
        args.sampler = ScenarioSampler(fixed=fixed, warmup=True, max_tasks_cap=GENERALIST_MAX_ROWS, focus=focus)
    except ValueError as error:
        parser.error(str(error))
    return args


def main() -> None:
    args = parse_args()
    start = time.perf_counter()
    seeds = range(PROBE_SEED, PROBE_SEED + args.episodes)
    episodes = [(seed, scenario_settings({}, args.sampler, seed)) for seed in seeds]
    results, rows = {}, []
    for planner in WARMUP_PLANNERS:
        weights, rates = [], []
        for seed, settings in tqdm(episodes, desc=f"warm-up by {planner}", unit="episode"):
            slots, rate = play_after(planner, args.checkpoint, settings, seed, args.sampler.warmup_slots(settings))
            weights += slots
            rates.append(rate)
        mean = np.asarray(weights, dtype=float).mean(axis=0) if weights else np.full(len(PATHS), np.nan)
        results[planner] = {"slots": len(weights), "weights": dict(zip(PATHS, map(float, mean))), "completion": rates}
        cells = [planner, str(len(episodes)), str(len(weights)), *(f"{w:.2f}" for w in mean)]
        rows.append([*cells, f"{np.mean(rates):.3f}"])
    low, high = args.loads
    note = (
        f"Gate of `{args.checkpoint}` after each planner's warm-up: `{args.workload}` scenarios of the default "
        f"generalist sampler with at least {args.min_nodes} nodes at a load of {low:g}-{high:g} (`train` curves, "
        f"`flow_fixed` forecasts, seeds from {PROBE_SEED:,}); the planner plays the warm-up slots the sampler "
        f"gives, the network the rest. {time.perf_counter() - start:.0f} s."
    )
    markdown = f"# Does the warm-up tell the gate?\n\n{note}\n\n{format_table(HEADER, rows)}\n"
    write_report(args.out, markdown, results)  # printed too


if __name__ == "__main__":
    main()
