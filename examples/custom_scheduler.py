"""A new scheduler in a few lines, evaluated beside the packaged heuristics.

    python examples/custom_scheduler.py --seeds 20

"Earliest deadline first, but never more than two nodes per task": with sublinear data-parallel
scaling a third node on one task buys less than a first node on another.
"""

from __future__ import annotations

import argparse

import numpy as np

import mara_agents
from mara_agents import ObservationScheduler
from mara_agents.cli import format_table
from mara_env.observation import DecodedObservation


class CappedEDF(ObservationScheduler):
    """Earliest deadline first with at most ``cap`` nodes per task."""

    def __init__(self, cap: int = 2, seed: int | None = 0) -> None:
        self.cap = cap
        super().__init__(seed)

    def choose(self, obs: DecodedObservation, allowed: np.ndarray) -> int | None:
        taken = np.rint(obs.row("chosen_now") * obs.layout.num_nodes)
        open_rows = allowed[taken[allowed] < self.cap]
        if open_rows.size == 0:
            return None  # idle rather than over-subscribe
        return int(open_rows[np.argmin(obs.row("slots_left")[open_rows])])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--load", default="train")
    args = parser.parse_args()
    seeds = range(args.seeds)
    summaries = {"capped_edf": mara_agents.summarize(mara_agents.evaluate(CappedEDF(), seeds, load=args.load))}
    for name in ("uniform", "edf"):
        summaries[name] = mara_agents.summarize(mara_agents.evaluate(name, seeds, load=args.load))
    print(format_table(summaries))


if __name__ == "__main__":
    main()
