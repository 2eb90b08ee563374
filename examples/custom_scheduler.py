"""A new scheduler in a few lines, benchmarked beside the packaged ones with one command.

"Earliest deadline first, but never more than two nodes per task": with sublinear data-parallel
scaling a third node on one task buys less than a first node on another. From the repository root:

    mara bench --agents examples.custom_scheduler:CappedEDF edf lara --workloads synthetic --loads train \
        --seeds 20 --out runs/custom

or ``python examples/custom_scheduler.py`` (the same, extra flags passed on, e.g. ``--seeds 5``).
"""

from __future__ import annotations

import numpy as np

from mara_agents import ObservationScheduler
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


if __name__ == "__main__":
    import sys

    from mara_agents.cli import main

    agents = ["--agents", "examples.custom_scheduler:CappedEDF", "edf", "lara"]
    grid = ["--workloads", "synthetic", "--loads", "train", "--seeds", "20", "--out", "runs/custom"]
    sys.exit(main(["bench", *agents, *grid, *sys.argv[1:]]))
