"""A clairvoyant switch between planners: the most that choosing a planner window by window could add.

    python benchmarks/clairvoyant_switch.py --out docs/results/clairvoyant_switch \\
        --also edf_uniform mara_generalist           # the slowest probe: 3 full copies every 25 slots

MARA's generalist mixes skip paths that follow ``srw``, ``edf`` and ``uniform``, weighted by a gate it
sets each slot. At 32 and 64 nodes it is level with the better planner of each cell, and no gate
trained so far has found more. This measures whether a better gate could: the *switcher* below chooses
one candidate every ``--every`` slots by looking into the future. It copies the env (the true
simulator, with the episode's future arrivals, curves and faults), plays each candidate in its copy for
``--lookahead`` slots (0: to the episode's end), and plays the candidate whose copy completed the most
tasks net of those it let expire (ties keep the one playing) in the real episode until the next choice.
It sees the future, so it is not a scheduler; it is a ceiling on what a choice among the candidates
window by window could reach, with a gate that cannot see the future, at that window length.

Each candidate also plays alone on the same seeds (validation curves, seeds 10,000,000 onwards, as
``forecast_calibration.py``), and ``--also`` names schedulers played alone for comparison (the
generalist, say). Per cell: every mean, the best candidate, the switcher minus it paired by seed (95%
t-interval), and the share of windows each candidate was chosen for. Writes ``OUT.md`` and ``OUT.json``.

Candidates must be able to share one env: those that read forecasts must ask for the same settings,
and a candidate that did not play the last window is handed the env as it is (the packaged planners
rebuild what they keep from the observation).
"""

from __future__ import annotations

import argparse
import copy
import json
import time
from pathlib import Path

import numpy as np
from generalisation import TRACE_CELL, parse_cells, validation_env  # the sibling script

from mara_agents import load_agent
from mara_agents.base import Scheduler
from mara_agents.evaluation import env_config, evaluate
from mara_agents.mara.scenarios import VALIDATION_SEED
from mara_agents.mara.workers import map_forked
from mara_agents.stats import format_mean_ci, paired_difference, significance
from mara_env.env import live_turns, raw_env

DEFAULT_CELLS = [  # where the generalist is level with the planners (32, 64 nodes) and, for contrast, leads (8)
    *(f"{w}:{load}:32" for w, load in (("synthetic", "train"), ("mixed", "train"), ("rl", "train"), ("rl", "heavy"),
                                        ("tabular", "train"), ("tabular", "heavy"))),
    "mixed:train:64", "rl:train:64", "tabular:heavy:64", "vision:heavy:8", "mixed:heavy:8", "tabular:extreme:8",
]  # fmt: skip
DEFAULT_CANDIDATES = ["srw", "edf", "uniform"]  # the generalist's three skip paths


def play_slots(env: raw_env, scheduler: Scheduler, slots: int) -> None:
    """Play ``scheduler`` on ``env`` for up to ``slots`` slots (fewer if the episode ends)."""
    played = 0
    for agent in live_turns(env):
        if played >= slots:
            break
        env.step(scheduler.act(env.observe(agent), agent))
        played += bool(env.agents) and env.agent_selection == env.agents[0]  # a slot ended


def net_completions(env: raw_env) -> int:
    """Tasks the episode has completed so far, less those it let expire."""
    metrics = env.sim.metrics()
    return int(metrics["completed"]) - int(metrics["expired"])


def clairvoyant_choice(env: raw_env, schedulers: dict[str, Scheduler], lookahead: int, playing: str) -> str:
    """The candidate whose play on a copy of ``env`` nets the most completions over ``lookahead`` slots
    (0: to the episode's end); ties keep ``playing``, then the first named. ``env`` and the schedulers
    are left as they were (each copy plays a copy of its scheduler)."""
    slots = lookahead if lookahead > 0 else env.config.horizon
    start = net_completions(env)
    nets = {}
    for name, scheduler in schedulers.items():
        future = copy.deepcopy(env)
        play_slots(future, copy.deepcopy(scheduler), slots)
        nets[name] = net_completions(future) - start
    best = max(nets.values())
    return playing if nets[playing] == best else next(name for name, net in nets.items() if net == best)


def shared_env(schedulers: dict[str, Scheduler], env: dict) -> dict:
    """The ``raw_env`` settings every candidate can play on: those of the candidates that read forecasts
    (they must agree), else the first's. ``ValueError`` naming two candidates that ask for different envs."""
    configs = {name: env_config(s, env) for name, s in schedulers.items()}
    readers = {name: c for name, c in configs.items() if c.get("forecaster") != "none"}
    if not readers:
        return next(iter(configs.values()))
    (first, config), *others = readers.items()
    for name, other in others:
        if other != config:
            raise ValueError(f"candidates {first!r} and {name!r} ask for different envs ({config} and {other})")
    return config


def switch_episode(job: tuple) -> dict:
    """One episode of the switcher: its completion rate and the share of windows each candidate played."""
    candidates, cell, seed, every, lookahead, horizon, trace = job
    schedulers = {name: load_agent(name) for name in candidates}
    env = raw_env(**shared_env(schedulers, validation_env(cell, trace, horizon)))
    env.reset(seed=seed)
    for scheduler in schedulers.values():
        scheduler.reset(seed)
    playing, chosen = candidates[0], []
    while env.agents:
        playing = clairvoyant_choice(env, schedulers, lookahead, playing)
        chosen.append(playing)
        play_slots(env, schedulers[playing], every)
    shares = {name: chosen.count(name) / len(chosen) for name in candidates}
    return {"completion_rate": env.metrics()["completion_rate"], "shares": shares}


def _play_alone(job: tuple) -> list[float]:
    agent, cell, seeds, horizon, trace = job
    records = evaluate(agent, range(VALIDATION_SEED, VALIDATION_SEED + seeds), **validation_env(cell, trace, horizon))
    return [r["completion_rate"] for r in records]


def report(rates: dict, shares: dict, candidates: list[str], also: list[str], cells: list[str], settings: str) -> str:
    """The markdown report: per cell every mean, the switcher against the best candidate, the shares."""
    names = candidates + also
    lines = [
        "# A clairvoyant switch between planners",
        "",
        f"{settings} Mean completion rate on validation curves and seeds; `switch - best`: the switcher minus "
        "the best candidate of the cell (by mean), paired by seed (points, 95% t-interval); `chosen`: the share "
        "of windows each candidate played.",
        "",
        "| cell | " + " | ".join(names) + " | switcher | switch - best | chosen |",
        "|---|" + "---|" * (len(names) + 3),
    ]
    gains = []
    for cell in cells:
        best = max(candidates, key=lambda name: np.mean(rates[cell][name]))
        gain = paired_difference(rates[cell]["switcher"], rates[cell][best])
        gains.append(gain)
        chosen = ", ".join(f"{name} {np.mean(shares[cell][name]):.2f}" for name in candidates)
        row = [cell] + [f"{np.mean(rates[cell][n]):.3f}" for n in names] + [f"{np.mean(rates[cell]['switcher']):.3f}"]
        row += [f"{format_mean_ci(gain, 1, 100, True)} vs {best}", chosen]
        lines.append("| " + " | ".join(row) + " |")
    below = sum(significance(g) < 0 for g in gains)
    above = sum(significance(g) > 0 for g in gains)
    mean = 100 * np.mean([g["mean"] for g in gains])
    lines += ["", f"Switcher minus the best candidate: {mean:+.1f} points on average over {len(cells)} cells; "
              f"significantly below in {below}, above in {above}."]  # fmt: skip
    return "\n".join(lines) + "\n"


def parse_args() -> tuple[argparse.Namespace, list[tuple[str, str, int]]]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True, help="report path without suffix (.md and .json)")
    parser.add_argument("--cells", nargs="+", default=DEFAULT_CELLS, help="WORKLOAD:LOAD:NODES cells")
    parser.add_argument(
        "--candidates", nargs="+", default=DEFAULT_CANDIDATES, help="agent specs the switch chooses among"
    )
    parser.add_argument("--also", nargs="+", default=[], help="agent specs played alone for comparison")
    parser.add_argument("--every", type=int, default=25, help="slots between two choices (>= 1)")
    parser.add_argument("--lookahead", type=int, default=0, help="slots each copy plays (0: to the episode's end)")
    parser.add_argument("--trace", type=Path, help="a trace played as one more cell (mixed curves, 32 nodes)")
    parser.add_argument("--seeds", type=int, default=8, help="validation episodes per cell")
    parser.add_argument("--horizon", type=int, default=300, help="slots per episode")
    parser.add_argument("--jobs", type=int, default=2, help="processes")
    args = parser.parse_args()
    for flag, value, low in (("--every", args.every, 1), ("--lookahead", args.lookahead, 0), ("--seeds", args.seeds, 2),
                             ("--horizon", args.horizon, 1), ("--jobs", args.jobs, 1)):  # fmt: skip
        if value < low:
            parser.error(f"{flag} must be >= {low}, got {value}")
    if len(set(args.candidates)) != len(args.candidates):
        parser.error(f"--candidates must differ, got {args.candidates}")
    if args.trace is not None and not args.trace.is_file():
        parser.error(f"--trace {args.trace} is not a file")
    try:
        cells = parse_cells(args.cells) + ([TRACE_CELL] if args.trace else [])
        schedulers = {name: load_agent(name) for name in args.candidates}
        for name in args.also:
            load_agent(name)  # an unknown spec is named before any episode is played
        shared_env(schedulers, validation_env(cells[0], args.trace, args.horizon))
    except (ValueError, TypeError) as error:
        parser.error(str(error))
    return args, cells


def main() -> None:
    args, cells = parse_args()
    began = time.time()
    settings = (args.every, args.lookahead, args.horizon, args.trace)
    seeds = range(VALIDATION_SEED, VALIDATION_SEED + args.seeds)
    episodes = [(tuple(args.candidates), cell, seed, *settings) for cell in cells for seed in seeds]
    names = args.candidates + args.also
    alone = [(agent, cell, args.seeds, args.horizon, args.trace) for cell in cells for agent in names]
    switched = map_forked(switch_episode, episodes, args.jobs, desc="clairvoyant switch episodes")
    played = map_forked(_play_alone, alone, args.jobs, desc="candidates alone")
    keys = [":".join(map(str, cell)) for cell in cells]
    rates = {key: {} for key in keys}
    shares = {key: {name: [] for name in args.candidates} for key in keys}
    for (_, cell, *_), record in zip(episodes, switched):
        key = ":".join(map(str, cell))
        rates[key].setdefault("switcher", []).append(record["completion_rate"])
        for name, share in record["shares"].items():
            shares[key][name].append(share)
    for (agent, cell, *_), values in zip(alone, played):
        rates[":".join(map(str, cell))][agent] = values
    lookahead = "to the episode's end" if args.lookahead == 0 else f"{args.lookahead} slots ahead"
    settings = (f"A choice every {args.every} slots, each candidate's copy played {lookahead}; {args.seeds} episodes "
                f"per cell of {args.horizon} slots; {time.time() - began:.0f} s on {args.jobs} processes.")  # fmt: skip
    text = report(rates, shares, args.candidates, args.also, keys, settings)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".md").write_text(text)
    summary = {"seeds": args.seeds, "every": args.every, "lookahead": args.lookahead, "rates": rates, "shares": shares}
    args.out.with_suffix(".json").write_text(json.dumps(summary, indent=1))
    print(text)


if __name__ == "__main__":
    main()
