"""Whether a slot actor's gate reads the ``arrival_rate`` global: its path weights as that one input moves.

    python benchmarks/gate_load_response.py --checkpoint runs/t53/warm_start.pt --out docs/results/gate_load_response
    python benchmarks/gate_load_response.py --checkpoint CK --nodes 8 --slots 20 --horizon 40   # a smoke run

A planner (``edf_uniform`` by default) plays one validation episode per load; at the first turn of each
chosen slot the checkpoint encodes the observation again with ``arrival_rate`` set to each of the given
rates, everything else unchanged, and the report gives the gate's weight on the ``srw`` path and on the
``uniform`` path (``edf`` has the rest). A gate that reads the signal moves with it; one that tells the
load from the rest of the state does not.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch

import mara_env
from mara_agents.mara.checkpoint import load_checkpoint
from mara_agents.mara.slot_network import SlotMARANet
from mara_agents.registry import load_agent
from mara_agents.stats import format_table
from mara_env.env import live_turns
from mara_env.forecast.evaluation import write_report
from mara_env.observation import GLOBAL_FEATURES

VALIDATION_SEED = 10_000_000  # as benchmarks/mara_select.py: no training episode and no benchmark plays it
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
        if env.slot.turn == 0 and env.sim.slot in slots and all(s != env.sim.slot for s, _ in seen):
            seen.append((env.sim.slot, observation["observation"].copy()))
        env.step(player.act(observation, agent))
    return seen


def gate_weights(net: SlotMARANet, vector, rate: float) -> tuple[float, float]:
    """The srw and uniform paths' weights of ``net`` on ``vector`` with its ``arrival_rate`` set to ``rate``."""
    changed = torch.as_tensor(vector).clone()
    changed[mara_env.observation.layout_of(vector).slices["global"].start + RATE] = rate
    with torch.no_grad():
        encoding = net.encode(changed[None])
    return float(encoding.gate[0, 0]), float(encoding.uniform_gate[0, 0])


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
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    try:
        net, trained, _ = load_checkpoint(Path(args.checkpoint))
    except ValueError as error:
        parser.error(str(error))
    if not isinstance(net, SlotMARANet) or net.hint_embed is None:
        parser.error(f"--checkpoint {args.checkpoint}: a slot actor with planner hints has a gate; this one has none")
    if max(args.slots) >= args.horizon:
        parser.error(f"--slots must lie before the horizon ({args.horizon}), got {max(args.slots)}")
    start = time.perf_counter()
    env = {"num_nodes": args.nodes, "max_tasks": max(16, 2 * args.nodes), "workload": args.workload,
           "curve_split": "val", "horizon": args.horizon, "forecaster": trained.get("forecaster", "flow")}  # fmt: skip
    rows, records = [], []
    for load in args.loads:
        for slot, vector in slot_starts({**env, "load": load}, args.planner, args.slots, VALIDATION_SEED):
            own = float(vector[mara_env.observation.layout_of(vector).slices["global"].start + RATE])
            weights = [gate_weights(net, vector, rate) for rate in (own, *args.rates)]
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
    markdown = note + "\n\n" + format_table(header, rows)
    if args.out is None:
        print(markdown)
        return
    write_report(args.out, markdown, records)


if __name__ == "__main__":
    main()
