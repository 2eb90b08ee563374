"""Switching between ``srw`` and ``edf_uniform`` within an episode, on validation episodes.

    python benchmarks/planner_switch.py --out docs/results/planner_switch.md
    python benchmarks/planner_switch.py --sizes 8 --seeds 2 --horizon 40 --rules "fill 0.5"   # a smoke run

On big ``tabular`` clusters the better planner depends on the load: ``srw`` leads at the ``train`` load
and ``edf_uniform`` under overload, and the generalist's teacher labels each episode with its winner.
The load itself is not in the observation, so a label the policy can follow has to be a rule of what it
sees. This script plays such rules (a switch between the two planners) on the same episodes as both
planners alone, to see whether any of them is as good as the better planner at every load:

- ``fill F``: per slot, ``srw`` while the tasks in the system (in the table and queued) are at most
  ``F`` times the table's rows, ``edf_uniform`` beyond (which plays ``uniform`` once a task waits);
- ``density D``: per slot, ``srw`` while the demand density is at most ``D``: over the tasks with a
  forecast in deadline order, the largest ratio of their summed median remaining work to the work the
  nodes that are up deliver by that deadline; ``edf_uniform`` beyond;
- ``late F``: ``srw`` until the mean crowd (tasks in the system over rows) of the slots so far exceeds
  ``F`` (judged from the 20th slot on), then ``edf_uniform`` for good;
- ``early F``: ``edf_uniform`` for the first 20 slots, then ``srw`` for good if their mean crowd is at
  most ``F``;
- ``after F``: ``edf_uniform`` for the first 20 slots, then ``fill F``;
- ``rate F``: per slot, ``srw`` while the observation's ``arrival_rate`` (tasks arrived per slot and node
  since the episode began) is at most ``F``, ``edf_uniform`` beyond;
- ``arrivals F``: ``edf_uniform`` for the first 20 slots, then ``rate F``.

``late`` and ``early`` remember the episode, which a memoryless policy cannot; they show what a label
would need to know. ``after`` and ``arrivals`` remember only the slot count, and ``rate`` nothing: the
arrival rate is a global of the observation, a slow load signal a policy can read.
Episodes are ``val`` curves with seeds from 10,000,000, as ``mara_select.py`` plays them (no test seed).
The report gives each rule's completion rate per cell and its difference from the better planner of the
cell, paired by seed; ``--replay RECORDS`` summarises an earlier run's records again, playing nothing.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import time
from pathlib import Path

for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")  # one BLAS thread per worker process (set before numpy loads)

import numpy as np  # noqa: E402
from generalisation import HORIZON  # noqa: E402  (the sibling script: benchmarks/ is on sys.path)
from mara_select import VALIDATION_SEED  # noqa: E402
from tqdm import tqdm  # noqa: E402

from mara_agents.heuristics import tasks_in_system  # noqa: E402
from mara_agents.mara.teacher_rules import PlannerSwitchScheduler  # noqa: E402
from mara_agents.registry import load_agent  # noqa: E402
from mara_agents.stats import format_mean_ci, format_table, paired_difference, significance  # noqa: E402
from mara_env.forecast.evaluation import write_report  # noqa: E402
from mara_env.observation import DecodedObservation  # noqa: E402

PLANNERS = ("srw", "edf_uniform")
KINDS = ("fill", "density", "late", "early", "after", "rate", "arrivals")
JUDGED_FROM = 20  # slots a remembering rule watches before it decides


def crowd(obs: DecodedObservation) -> float:
    """Tasks in the system (in the table and queued for a row) over the table's rows."""
    return tasks_in_system(obs) / obs.layout.max_tasks


def demand_density(obs: DecodedObservation) -> float:
    """The largest, over deadlines, of the median remaining work due by then over the up nodes' slots."""
    rows = np.flatnonzero(obs.present & obs.forecast_valid)
    if rows.size == 0:
        return 0.0
    slots = obs.slots_left[rows]
    order = np.argsort(slots, kind="stable")
    due = np.cumsum(np.maximum(obs.remaining("p50")[rows][order], 0.0))
    return float(np.max(due / (max(obs.up_nodes, 1) * np.maximum(slots[order], 1.0))))


class PlannerSwitch(PlannerSwitchScheduler):
    """``srw`` or ``edf_uniform`` by one of the rules of :data:`KINDS` with threshold ``limit``; counts the
    turns it played and those ``srw`` played."""

    def __init__(self, kind: str, limit: float, seed: int | None = 0) -> None:
        self.kind, self.limit = kind, limit
        super().__init__(seed)

    def reset(self, seed: int | None = None) -> None:
        super().reset(seed)
        self.crowd_sum, self.slots_seen = 0.0, 0
        self.sticky = "edf_uniform" if self.kind in ("early", "after", "arrivals") else "srw"
        self.current = self.sticky
        self.turns = self.srw_turns = 0

    def slot_planner(self, obs: DecodedObservation) -> str:
        """The rule's planner for a new slot (the remembering rules count it first)."""
        self.crowd_sum, self.slots_seen = self.crowd_sum + crowd(obs), self.slots_seen + 1
        mean = self.crowd_sum / self.slots_seen
        if self.kind == "late" and self.slots_seen >= JUDGED_FROM and mean > self.limit:
            self.sticky = "edf_uniform"
        if self.kind == "early" and self.slots_seen == JUDGED_FROM and mean <= self.limit:
            self.sticky = "srw"
        if self.kind == "density":
            return "srw" if demand_density(obs) <= self.limit else "edf_uniform"
        if self.kind == "fill" or (self.kind == "after" and self.slots_seen > JUDGED_FROM):
            return "srw" if crowd(obs) <= self.limit else "edf_uniform"
        if self.kind == "rate" or (self.kind == "arrivals" and self.slots_seen > JUDGED_FROM):
            return "srw" if obs.globals["arrival_rate"] <= self.limit else "edf_uniform"
        return self.sticky

    def choose(self, obs: DecodedObservation, allowed: np.ndarray) -> int | None:
        row = super().choose(obs, allowed)
        self.turns += 1
        self.srw_turns += self.last_path == "srw"
        return row


def parse_rule(text: str) -> tuple[str, float]:
    """``(kind, limit)`` of a rule ``"KIND LIMIT"``; ``ValueError`` naming what is allowed."""
    kind, _, limit = text.partition(" ")
    try:
        value = float(limit)
    except ValueError:
        value = float("nan")
    if kind not in KINDS or not (np.isfinite(value) and value > 0):
        raise ValueError(f"a rule is 'KIND LIMIT' with KIND one of {list(KINDS)} and LIMIT > 0, got {text!r}")
    return kind, value


def _play(job: tuple) -> tuple[tuple, tuple[float, float]]:
    """One episode: ``(agent, workload, load, M, seed, horizon)`` to (completion rate, share of srw turns)."""
    from mara_agents.evaluation import evaluate

    agent, workload, load, nodes, seed, horizon = job
    scheduler = load_agent(agent) if agent in PLANNERS else PlannerSwitch(*parse_rule(agent))
    env = {"num_nodes": nodes, "max_tasks": max(16, 2 * nodes), "workload": workload, "load": load}
    record = evaluate(scheduler, [seed], curve_split="val", horizon=horizon, **env)[0]
    switch = isinstance(scheduler, PlannerSwitch)
    share = scheduler.srw_turns / max(scheduler.turns, 1) if switch else float(agent == "srw")
    return job[:5], (float(record["completion_rate"]), share)


def report(rates: dict, rules: list[str], cells: list[tuple], seeds: list[int], note: str) -> str:
    """Two markdown tables: each agent's completion rate per cell (a rule's share of ``srw`` turns in
    brackets), then each rule's difference from the better planner of the cell, paired by seed; and per
    rule the cells where it is significantly below that planner."""
    completion, versus, below = [], [], dict.fromkeys(rules, 0)
    for workload, load, nodes in cells:
        per = {a: np.array([rates[(a, workload, load, nodes, s)] for s in seeds]) for a in (*PLANNERS, *rules)}
        better = max(PLANNERS, key=lambda p: per[p][:, 0].mean())
        cell = [workload, load, str(nodes)]
        completion.append(cell + [f"{per[p][:, 0].mean():.3f}" for p in PLANNERS])
        completion[-1] += [f"{per[r][:, 0].mean():.3f} ({per[r][:, 1].mean():.0%})" for r in rules]
        differences = {r: paired_difference(per[r][:, 0], per[better][:, 0]) for r in rules}
        versus.append(cell + [better, *(format_mean_ci(differences[r], 1, 100, True) for r in rules)])
        for rule, difference in differences.items():
            below[rule] += significance(difference) < 0
    summary = "Cells where a rule is significantly below the better planner: " + ", ".join(
        f"`{rule}` {count}" for rule, count in below.items()
    )
    return "\n\n".join([
        note,
        format_table(["workload", "load", "M", *PLANNERS, *rules], completion),
        "Each rule's difference from the better planner of the cell, in points (95% t-interval, paired by seed). "
        + summary + ".",
        format_table(["workload", "load", "M", "better planner", *rules], versus),
    ])  # fmt: skip


def read_records(path: Path, keys: list[tuple], parser: argparse.ArgumentParser) -> dict:
    """The rates of ``keys`` (agent, workload, load, M, seed) from an earlier run's records; a parser
    error naming the first episode missing."""
    try:
        records = json.loads(path.read_text())
        rates = {(r["agent"], r["workload"], r["load"], r["nodes"], r["seed"]): (r["completion_rate"], r["srw_turns"])
                 for r in records}  # fmt: skip
    except (OSError, ValueError, TypeError, KeyError) as error:
        parser.error(f"--replay {path}: not the records this script writes ({error})")
    missing = [key for key in keys if key not in rates]
    if missing:
        parser.error(f"--replay {path}: no record of {missing[0]} (give the rules, sizes, loads and seeds it played)")
    return {key: rates[key] for key in keys}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rules", nargs="+", default=["fill 0.5", "fill 0.9", "density 1", "density 2",
                                                       "late 1", "late 1.5", "early 0.3", "early 0.5",
                                                       "after 1", "after 2.5"])  # fmt: skip
    parser.add_argument("--workloads", nargs="+", default=["tabular"])
    parser.add_argument("--loads", nargs="+", default=["train", "heavy", "extreme"])
    parser.add_argument("--sizes", nargs="+", type=int, default=[32, 64])
    parser.add_argument("--seeds", type=int, default=8, help="validation seeds per cell")
    parser.add_argument("--horizon", type=int, default=HORIZON)
    parser.add_argument("--jobs", type=int, default=2, help="worker processes")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--replay", type=Path, metavar="RECORDS",
                        help="play nothing: summarise the records (JSON) an earlier run wrote")  # fmt: skip
    args = parser.parse_args()
    try:
        for rule in args.rules:
            parse_rule(rule)
    except ValueError as error:
        parser.error(f"--rules: {error}")
    if args.seeds < 2:
        parser.error(f"--seeds must be at least 2 (paired intervals need them), got {args.seeds}")
    cells = [(w, load, m) for w in args.workloads for m in args.sizes for load in args.loads]
    seeds = [VALIDATION_SEED + i for i in range(args.seeds)]
    jobs = [(a, *cell, s, args.horizon) for cell in cells for a in (*PLANNERS, *args.rules) for s in seeds]
    if args.replay is None:
        start = time.perf_counter()
        with mp.get_context("spawn").Pool(args.jobs) as pool:
            rates = dict(tqdm(pool.imap(_play, jobs), total=len(jobs), desc="planner switch"))
        how = f"{time.perf_counter() - start:.0f} s with {args.jobs} processes"
    else:
        rates = read_records(args.replay, [job[:5] for job in jobs], parser)
        how = f"summarised from the records in `{args.replay.name}`"
    note = (
        f"Completion rate per cell (`val` curves, {args.seeds} seeds from {VALIDATION_SEED:,}, {args.horizon} "
        f"slots, K_max = max(16, 2M)); in brackets the share of node turns a rule played `srw`; {how}."
    )
    markdown = report(rates, args.rules, cells, seeds, note)
    if args.out is None:
        print(markdown)
        return
    fields = ("agent", "workload", "load", "nodes", "seed", "completion_rate", "srw_turns")
    write_report(args.out, markdown, [dict(zip(fields, (*key, *value))) for key, value in rates.items()])


if __name__ == "__main__":
    main()
