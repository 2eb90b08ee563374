"""How the generalist's gate led: which planner path it weighed per slot, how often the lead changed,
and how often its decisions matched ``srw``, ``edf`` and ``uniform``, by workload, load and size.

    python benchmarks/mara_gate.py   # every workload, train load, 4 and 32 nodes, into runs/mara_gate.md
    python benchmarks/mara_gate.py --workloads rl tabular --loads extreme --sizes 8 --seeds 5 --horizon 300
    python benchmarks/mara_gate.py --checkpoint runs/mara_generalist/checkpoint.pt   # any hinted checkpoint
    python benchmarks/mara_gate.py --pin srw --workloads tabular --sizes 32   # the gate held on one path

The hinted slot actor (``mara_agents.mara.slot_network``) mixes skip paths, one per planner (``srw``,
``edf`` and, with the uniform pick, ``uniform``), with weights read from the slot's encoding. For
every slot with a task to choose this records the weights (from the scheduler's ``slot_parts``); for
every turn it asks each planner, on the very observation the generalist acted on, what it would have
played. The planners read only the observation, so they watch without changing the episode. Columns:
completion rate and switches per task of the episodes played, the mean weight of each path and the
10th/90th percentiles of the ``srw`` one, the share of slots each path led (had the largest weight),
lead changes per 100 consecutive slots, and the share of turns each planner agreed with.
``--pin PATH`` plays the network with its gate held on one path (``gate_edits.pin_gate``), so a
cell's completion with each pin, beside the learned gate's, says what the gate's choice costs there.
``cell_diagnostics.py`` gives what a way of playing cost (wasted work, switches);
``generalisation.py`` the outcome.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from generalisation import table_size  # the sibling script (benchmarks/ is on sys.path)
from tqdm.auto import tqdm

import mara_agents
from mara_agents.base import EnvRequirements, Scheduler
from mara_agents.evaluation import evaluate
from mara_agents.mara.checkpoint import load_checkpoint
from mara_agents.mara.gate_edits import pin_gate
from mara_agents.mara.scheduler import GENERALIST_CHECKPOINT, MARAScheduler
from mara_agents.registry import load_agent
from mara_agents.stats import format_table, summarize
from mara_env.forecast.evaluation import write_report

PATHS = ("srw", "edf", "uniform")  # the gate's paths, in the order of gate_paths.GATE_PATHS
HEADER = ["workload", "load", "M", "slots", "completion", "switches/task", *(f"w {p}" for p in PATHS)]
HEADER += ["srw p10", "srw p90", *(f"led {p}" for p in PATHS), "lead flips /100 slots"]
HEADER += [f"agree {p}" for p in PATHS]


class GateRecorder:
    """Plays ``scheduler`` (a hinted slot MARA) and records its path weights per slot with a task, and
    per turn whether each of ``shadows`` (name -> scheduler) would have played the same. The shadows
    only watch: their actions are never played."""

    def __init__(self, scheduler: Scheduler, shadows: dict[str, Scheduler]) -> None:
        self.scheduler, self.shadows = scheduler, shadows
        self.requirements: EnvRequirements = scheduler.requirements
        self.weights: list[tuple[float, float, float]] = []  # per slot with a task, over all episodes
        self.episode_starts: list[int] = []  # where each episode's slots begin in ``weights``
        self.agreements = {name: 0 for name in shadows}
        self.turns = 0
        self._parts: object | None = None

    def reset(self, seed: int | None = None) -> None:
        self.scheduler.reset(seed)
        for shadow in self.shadows.values():
            shadow.reset(seed)
        self.episode_starts.append(len(self.weights))
        self._parts = None

    def act(self, observation: dict, agent: str) -> int:
        action = self.scheduler.act(observation, agent)
        parts = self.scheduler.slot_parts
        if parts is None:
            raise ValueError("mara_gate needs a slot-encoding MARA network (architecture 'slot')")
        if parts is not self._parts:  # a new slot: the actor encoded it at this turn
            self._parts = parts
            if np.asarray(observation["action_mask"])[1:].any():  # a slot with a task to choose
                self.weights.append((parts.gate, 1.0 - parts.gate - parts.uniform_gate, parts.uniform_gate))
        for name, shadow in self.shadows.items():
            self.agreements[name] += int(shadow.act(observation, agent) == action)
        self.turns += 1
        return action

    def summary(self) -> dict[str, float]:
        """Slots, mean path weights, the srw weight's 10th/90th percentiles, share of slots each path
        led, lead flips per 100 slot changes within an episode, and each shadow's share of agreeing turns.
        The gate's figures are NaN where no slot had a task (a short or empty episode)."""
        out = {"slots": float(len(self.weights)), **gate_figures(self.weights, set(self.episode_starts))}
        out |= {f"agree {name}": count / max(self.turns, 1) for name, count in self.agreements.items()}
        return out


def gate_figures(slots: list[tuple[float, float, float]], episode_starts: set[int]) -> dict[str, float]:
    """The gate's columns from per-slot path weights (``episode_starts``: indices where episodes begin)."""
    names = [*(f"w {p}" for p in PATHS), "srw p10", "srw p90", *(f"led {p}" for p in PATHS), "lead flips /100 slots"]
    if not slots:
        return dict.fromkeys(names, float("nan"))
    weights = np.asarray(slots, dtype=float)
    lead = weights.argmax(axis=1)
    changes = [i for i in range(1, len(lead)) if i not in episode_starts]  # slot pairs within one episode
    flips = sum(int(lead[i] != lead[i - 1]) for i in changes)
    p10, p90 = np.percentile(weights[:, 0], [10, 90])
    values = [*weights.mean(axis=0), p10, p90, *((lead == j).mean() for j in range(len(PATHS)))]
    return dict(zip(names, [*map(float, values), 100.0 * flips / max(len(changes), 1)]))


def player(checkpoint: str | None, pin: str | None) -> Scheduler:
    """The generalist of ``checkpoint`` (``None``: the shipped one), its gate held on ``pin`` if given."""
    if pin is None:
        return load_agent(f"mara_generalist:{checkpoint}" if checkpoint else "mara_generalist")
    net, env, _ = load_checkpoint(Path(checkpoint or GENERALIST_CHECKPOINT))
    return MARAScheduler(pin_gate(net, pin), trained_env=env)


def gate_cell(
    checkpoint: str | None, cell: tuple[str, str, int], seeds: int, horizon: int, pin: str | None = None
) -> tuple[dict[str, float], list]:
    """Play ``seeds`` test episodes of the generalist of ``checkpoint`` (``None``: the shipped one;
    gate held on ``pin`` if given) on (workload, load, M) under a :class:`GateRecorder`: its summary
    with the episodes' completion and switches, and the per-slot weights."""
    workload, load, nodes = cell
    recorder = GateRecorder(player(checkpoint, pin), {name: mara_agents.make(name) for name in PATHS})
    env = {"num_nodes": nodes, "max_tasks": table_size(nodes), "horizon": horizon, "workload": workload, "load": load}
    means = summarize(evaluate(recorder, range(seeds), **env))
    outcome = {"completion": means["completion_rate"]["mean"], "switches/task": means["switches_per_task"]["mean"]}
    return {**outcome, **recorder.summary()}, recorder.weights


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workloads", nargs="+", default=["synthetic", "vision", "rl", "mixed", "charlm", "tabular"])
    parser.add_argument("--loads", nargs="+", default=["train"], help="load presets (train, heavy, extreme)")
    parser.add_argument("--sizes", nargs="+", type=int, default=[4, 32])
    parser.add_argument("--seeds", type=int, default=2, help="episodes per cell (seeds 0..N-1, as in the table)")
    parser.add_argument("--horizon", type=int, default=150)
    parser.add_argument("--checkpoint", help="a hinted MARA checkpoint instead of the shipped generalist")
    parser.add_argument("--pin", choices=PATHS, help="hold the gate on one path (uniform: networks with it)")
    parser.add_argument("--out", type=Path, default=Path("runs/mara_gate"))
    args = parser.parse_args()
    if args.seeds < 1 or args.horizon < 1 or min(args.sizes) < 1:
        parser.error("--seeds, --horizon and every --sizes value must be >= 1")
    if args.checkpoint and not Path(args.checkpoint).is_file():
        parser.error(f"--checkpoint {args.checkpoint}: no such file (a hinted MARA checkpoint, e.g. RUN/checkpoint.pt)")
    try:
        player(args.checkpoint, args.pin)  # refuses a pin the network cannot take before any play
    except ValueError as error:
        parser.error(f"--pin {args.pin}: {error}")
    cells = [(w, load, m) for m in args.sizes for w in args.workloads for load in args.loads]
    start = time.perf_counter()
    rows, records = [], {}
    for cell in tqdm(cells, desc="gate", unit="cell"):
        result, weights = gate_cell(args.checkpoint, cell, args.seeds, args.horizon, args.pin)
        records["{}/{}/M{}".format(*cell)] = weights
        rows.append([*cell[:2], str(cell[2]), f"{result['slots']:.0f}", *(f"{result[h]:.2f}" for h in HEADER[4:])])
    which = f"`{args.checkpoint}`" if args.checkpoint else "the shipped `mara_generalist`"
    which += f" with its gate pinned on `{args.pin}`" if args.pin else ""
    note = (
        f"Gate of {which} over the slots with a task (weights of the srw, edf and uniform paths; 0 for a "
        f"path the network lacks), and the planners' agreement with its turns; test-split curves, seeds "
        f"0..{args.seeds - 1}, {args.horizon} slots, K_max = max(16, 2M); {time.perf_counter() - start:.0f} s."
    )
    write_report(args.out, note + "\n\n" + format_table(HEADER, rows) + "\n", records)


if __name__ == "__main__":
    main()
