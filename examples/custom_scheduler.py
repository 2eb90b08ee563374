"""A new scheduler in a few lines, benchmarked beside the packaged ones with one command.

"Earliest deadline first, but never more than two nodes per task": with sublinear data-parallel
scaling a third node on one task buys less than a first node on another. From the repository root:

    mara bench --agents examples.custom_scheduler:CappedEDF edf lara --workloads synthetic --loads train \
        --seeds 20 --out runs/custom

or ``python examples/custom_scheduler.py`` (the same, extra flags passed on, e.g. ``--seeds 5``).
"""

from __future__ import annotations

import numpy as np

from mara_agents import NO_FORECASTS, ObservationScheduler
from mara_env.observation import DecodedObservation


class CappedEDF(ObservationScheduler):
    """Earliest deadline first with at most ``cap`` nodes per task."""

    requirements = NO_FORECASTS  # it never reads forecast features: run it on an env without a forecaster

    def __init__(self, cap: int = 2, seed: int | None = 0) -> None:
        self.cap = cap
        super().__init__(seed)

    def choose(self, obs: DecodedObservation, allowed: np.ndarray) -> int | None:
        open_rows = allowed[obs.nodes_taken[allowed] < self.cap]
        if open_rows.size == 0:
            return None  # idle rather than over-subscribe
        return int(open_rows[np.argmin(obs.slots_left[open_rows])])


if __name__ == "__main__":
    import sys

    from mara_agents.cli import main

    agents = ["--agents", "examples.custom_scheduler:CappedEDF", "edf", "lara"]
    grid = ["--workloads", "synthetic", "--loads", "train", "--seeds", "20", "--out", "runs/custom"]
    sys.exit(main(["bench", *agents, *grid, *sys.argv[1:]]))
