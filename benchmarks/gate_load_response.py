"""Whether a slot actor's gate reads the ``arrival_rate`` global: its path weights as that one input moves.

    python benchmarks/gate_load_response.py --checkpoint runs/t53/warm_start.pt --out docs/results/gate_load_response
    python benchmarks/gate_load_response.py --checkpoint CK --nodes 8 --slots 20 --horizon 40   # a smoke run
    python benchmarks/gate_load_response.py --checkpoint CK --own-play --loads heavy --horizon 300 --seeds 2

A planner (``edf_uniform`` by default) plays one validation episode per load; at the first turn of each
chosen slot the checkpoint encodes the observation again with ``arrival_rate`` set to each of the given
rates, everything else unchanged, and the report gives the gate's weight on the ``srw`` path and on the
``uniform`` path (``edf`` has the rest). A gate that reads the signal moves with it; one that tells the
load from the rest of the state does not.

With ``--own-play`` the checkpoint plays the episodes itself (``--seeds`` of them per load) and the report
gives, per band of slots (``--bands``), the share of slots with a task where the ``srw`` path led (had the
largest weight), its mean weight, the mean observed arrival rate, and the share where the gate led the path
``load_switch``'s rule names for the slot (the teacher of big ``tabular`` clusters): the states a student
reaches on its own may not be the teacher's.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import torch

import mara_env
from mara_agents.mara.checkpoint import load_checkpoint
from mara_agents.mara.gate_paths import GATE_PATHS
from mara_agents.mara.scenarios import VALIDATION_SEED
from mara_agents.mara.slot_network import SlotMARANet
from mara_agents.mara.teacher_rules import LOAD_SWITCH_RATE
from mara_agents.registry import load_agent
from mara_agents.stats import format_table
from mara_env.env import live_turns
from mara_env.forecast.evaluation import write_report
from mara_env.observation import GLOBAL_FEATURES

RATE = GLOBAL_FEATURES.index("arrival_rate")


def slot_starts(env_kwargs: dict, planner: str, slots: list[int], seed: int) -> list[tuple[int, object]]:
    """``(slot, observation vector)`` at the first turn of each of ``slots`` of an episode ``planner`` plays."""
    env = mara_env.raw_env(**env_kwargs)
    env.reset(seed=seed)
    player = load_agent(planner)
    player.reset(seed)
    seen = []
    for agent in live_turns(env):
        observation = env.observe(agent)
        if env.slot.turn == 0 and env.sim.slot in slots:  # a slot's first turn comes once
            seen.append((env.sim.slot, observation["observation"].copy()))
        env.step(player.act(observation, agent))
    return seen


def rate_position(vector) -> int:
    """Where an observation vector holds its ``arrival_rate``."""
    return mara_env.observation.layout_of(vector).slices["global"].start + RATE


def gate_at_rate(net: SlotMARANet, vector, rate: float) -> tuple[float, float]:
    """The srw and uniform paths' weights of ``net`` on ``vector`` with its ``arrival_rate`` set to ``rate``."""
    changed = torch.as_tensor(vector).clone()
    changed[rate_position(vector)] = rate
    with torch.no_grad():
        encoding = net.encode(changed[None])
    return float(encoding.gate[0, 0]), float(encoding.uniform_gate[0, 0])


def own_play(net: SlotMARANet, env_kwargs: dict, seeds: int, bands: list[int]) -> list[list[str]]:
    """Rows ``[load, slots, slots with a task, srw led, mean srw weight, mean rate, rule's path led, rule
    srw / edf / uniform]`` per band of slots of episodes ``net`` plays (validation seeds from
    :data:`VALIDATION_SEED`): the last two are the share of slots where the gate led the path
    ``load_switch``'s rule names (:func:`~mara_agents.mara.rule_gate.load_switch_path`), and the rule's
    shares of the three paths."""
    from mara_agents.mara.rule_gate import load_switch_path
    from mara_agents.mara.scheduler import MARAScheduler

    scheduler = MARAScheduler(net, trained_env={"forecaster": env_kwargs["forecaster"]})
    seen = []  # (slot, srw weight, whether srw led, observed rate) per slot with a task
    for seed in range(VALIDATION_SEED, VALIDATION_SEED + seeds):
        env = mara_env.raw_env(**env_kwargs)
        env.reset(seed=seed)
        scheduler.reset(seed)
        for agent in live_turns(env):
            observation = env.observe(agent)
            action = scheduler.act(observation, agent)
            parts = scheduler.slot_parts
            if env.slot.turn == 0 and parts is not None and observation["action_mask"][1:].any():
                vector = observation["observation"]
                led = int(np.argmax((parts.gate, 1.0 - parts.gate - parts.uniform_gate, parts.uniform_gate)))
                rule = GATE_PATHS.index(load_switch_path(vector))
                rate = float(vector[rate_position(vector)])
                seen.append((env.sim.slot, parts.gate, led == 0, rate, led == rule, rule))
            env.step(action)
    rows = []
    for low, high in zip(bands, bands[1:]):
        band = [row for row in seen if low <= row[0] < high]
        share = sum(row[2] for row in band) / max(len(band), 1)
        weight = sum(row[1] for row in band) / max(len(band), 1)
        rate = sum(row[3] for row in band) / max(len(band), 1)
        followed = sum(row[4] for row in band) / max(len(band), 1)
        rules = " / ".join(f"{sum(row[5] == path for row in band) / max(len(band), 1):.2f}" for path in range(3))
        rows.append([env_kwargs["load"], f"{low}-{high - 1}", str(len(band)), f"{share:.2f}", f"{weight:.2f}",
                     f"{rate:.3f}", f"{followed:.2f}", rules])  # fmt: skip
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checkpoint", required=True, help="a slot-actor MARA checkpoint with planner hints")
    parser.add_argument("--workload", default="tabular")
    parser.add_argument("--nodes", type=int, default=32)
    parser.add_argument("--loads", nargs="+", default=["train", "heavy"])
    parser.add_argument("--slots", nargs="+", type=int, default=[40, 80, 120], help="slots whose first turn is read")
    parser.add_argument("--rates", nargs="+", type=float, default=[0.02, 0.04, 0.07, 0.1])
    parser.add_argument("--planner", default="edf_uniform", help="the scheduler that plays the episodes")
    parser.add_argument("--horizon", type=int, default=150)
    parser.add_argument("--own-play", action="store_true", help="the checkpoint plays; report the gate by slot band")
    parser.add_argument("--seeds", type=int, default=2, help="(--own-play) validation episodes per load")
    parser.add_argument("--bands", nargs="+", type=int, default=[0, 30, 100, 200, 300],
                        help="(--own-play) slot band edges, increasing")  # fmt: skip
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    try:
        net, trained, _ = load_checkpoint(Path(args.checkpoint))
    except ValueError as error:
        parser.error(str(error))
    if not isinstance(net, SlotMARANet) or net.hint_embed is None:
        parser.error(f"--checkpoint {args.checkpoint}: a slot actor with planner hints has a gate; this one has none")
    if not args.own_play and max(args.slots) >= args.horizon:
        parser.error(f"--slots must lie before the horizon ({args.horizon}), got {max(args.slots)}")
    start = time.perf_counter()
    env = {"num_nodes": args.nodes, "max_tasks": max(16, 2 * args.nodes), "workload": args.workload,
           "curve_split": "val", "horizon": args.horizon, "forecaster": trained.get("forecaster", "flow")}  # fmt: skip
    if args.own_play:
        if args.seeds < 1 or sorted(set(args.bands)) != args.bands or len(args.bands) < 2:
            parser.error("--own-play needs --seeds >= 1 and at least two increasing --bands")
        rows = [row for load in args.loads for row in own_play(net, {**env, "load": load}, args.seeds, args.bands)]
        note = (
            f"The gate of `{args.checkpoint}` on its own play of `{args.workload}` at M = {args.nodes} ({args.seeds} "
            f"validation episodes per load from seed {VALIDATION_SEED:,}, {args.horizon} slots), per band of slots: "
            f"the slots with a task, the share where the `srw` path led, its mean weight, the mean observed "
            f"`arrival_rate`, the share where the gate led the path `load_switch`'s rule names (`srw` up to a rate "
            f"of {LOAD_SWITCH_RATE}, then `edf` while the tasks fit the table, `uniform` once some wait), and the "
            f"rule's shares of the three paths; {time.perf_counter() - start:.0f} s."
        )
        header = ["load", "slots", "slots with a task", "srw led", "srw weight", "arrival rate", "rule's path led",
                  "rule srw / edf / uniform"]  # fmt: skip
        records = [dict(zip(header, row)) for row in rows]
        finish(args.out, note + "\n\n" + format_table(header, rows), records)
        return
    rows, records = [], []
    for load in args.loads:
        for slot, vector in slot_starts({**env, "load": load}, args.planner, args.slots, VALIDATION_SEED):
            own = float(vector[rate_position(vector)])
            weights = [gate_at_rate(net, vector, rate) for rate in (own, *args.rates)]
            rows.append([load, str(slot), f"{own:.3f}", *(f"{srw:.2f} / {uniform:.2f}" for srw, uniform in weights)])
            records.append({"load": load, "slot": slot, "own_rate": own, "rates": [own, *args.rates],
                            "srw": [w[0] for w in weights], "uniform": [w[1] for w in weights]})  # fmt: skip
    note = (
        f"Gate weights `srw / uniform` of `{args.checkpoint}` at the first turn of slots {args.slots} of one "
        f"`{args.workload}` validation episode per load (seed {VALIDATION_SEED:,}, M = {args.nodes}, {args.horizon} "
        f"slots, played by `{args.planner}`), with `arrival_rate` as observed and set to each rate; "
        f"{time.perf_counter() - start:.0f} s."
    )
    header = ["load", "slot", "observed rate", "as observed", *(f"rate {rate:g}" for rate in args.rates)]
    finish(args.out, note + "\n\n" + format_table(header, rows), records)


def finish(out: Path | None, markdown: str, records: list[dict]) -> None:
    """Print the report, or write it and its records to ``out`` (.md and .json)."""
    if out is None:
        print(markdown)
        return
    write_report(out, markdown, records)


if __name__ == "__main__":
    main()
