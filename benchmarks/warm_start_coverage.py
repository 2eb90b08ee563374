"""Which scenarios a generalist's warm start cloned: its teacher episodes by workload and cluster size.

    python benchmarks/warm_start_coverage.py runs/t47/warm_start.pt --out runs/coverage_t47
    python benchmarks/warm_start_coverage.py runs/t48/warm_start.pt --episodes 120 --out runs/coverage_t48

The warm start clones the teacher on ``warm_start_episodes`` episodes, each a scenario drawn from the
run's sampler on its own seed (``mara_agents.mara.ppo.warm_start_seeds``). This draws the same scenarios
again from the sampler and seed the checkpoint recorded, without playing them, and counts them per
workload and cluster-size band, with the loads drawn. A band with one or two episodes of a workload is
all the cloning saw of it, whatever the agreement over all turns says.
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from pathlib import Path

from mara_agents.mara.checkpoint import load_checkpoint
from mara_agents.mara.ppo import warm_start_seeds
from mara_agents.mara.scenarios import ScenarioSampler, scenario_settings
from mara_agents.stats import format_table
from mara_env.forecast.evaluation import write_report

# not scenarios.SIZE_BANDS (the guide's bands): here the table's 4, 8, 32 and 64 nodes fall one per band
COVERAGE_BANDS = ((2, 5), (6, 16), (17, 32), (33, 64))


def band_of(nodes: int) -> str:
    """The label of the size band ``nodes`` falls in (``LO-HI``)."""
    for low, high in COVERAGE_BANDS:
        if low <= nodes <= high:
            return f"{low}-{high}"
    raise ValueError(f"nodes must be within {COVERAGE_BANDS[0][0]}-{COVERAGE_BANDS[-1][1]}, got {nodes}")


def coverage(scenarios: list[dict]) -> dict[str, dict[str, list[float]]]:
    """``{workload: {band: [load of each episode]}}`` of drawn scenario settings."""
    counts: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for settings in scenarios:
        counts[settings["workload"]][band_of(settings["num_nodes"])].append(round(float(settings["load"]), 2))
    return {workload: dict(bands) for workload, bands in sorted(counts.items())}


def recorded_run(checkpoint: Path) -> tuple[ScenarioSampler, int, int]:
    """``(sampler, seed, warm-start episodes)`` a checkpoint's run recorded; ``SystemExit`` if it has none."""
    try:  # the package's loader: a corrupt or foreign file gets its clear error, and nothing is unpickled
        _, _, extra = load_checkpoint(checkpoint)
    except ValueError as error:
        raise SystemExit(str(error)) from None
    config = extra.get("config") or {}
    if not config.get("scenarios"):
        raise SystemExit(f"{checkpoint}: no scenario sampler recorded (not a --generalist run's checkpoint)")
    return ScenarioSampler.from_record(config["scenarios"]), int(config["seed"]), int(config["warm_start_episodes"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("checkpoint", type=Path, help="a --generalist run's warm_start.pt or checkpoint")
    parser.add_argument("--episodes", type=int, help="warm-start episodes (default: as the run recorded)")
    parser.add_argument("--out", type=Path, default=Path("runs/warm_start_coverage"))
    args = parser.parse_args()
    if not args.checkpoint.is_file():
        parser.error(f"checkpoint {args.checkpoint} does not exist")
    sampler, seed, episodes = recorded_run(args.checkpoint)
    episodes = episodes if args.episodes is None else args.episodes
    if episodes < 1:
        parser.error(f"--episodes must be >= 1, got {episodes}")
    drawn = [scenario_settings({}, sampler, s) for s in warm_start_seeds(seed, episodes, scenarios=True)]
    counts = coverage(drawn)
    bands = [f"{low}-{high}" for low, high in COVERAGE_BANDS]
    rows = [
        [workload, *[_cell(by_band.get(band, [])) for band in bands], str(sum(map(len, by_band.values())))]
        for workload, by_band in counts.items()
    ]
    totals = [str(sum(len(by_band.get(band, [])) for by_band in counts.values())) for band in bands]
    rows.append(["all", *totals, str(episodes)])
    note = (
        f"The warm-start episodes of `{args.checkpoint}` (seed {seed}, {episodes} episodes) by workload and "
        "cluster size: the count, and the offered loads drawn where there are at most three."
    )
    write_report(args.out, note + "\n\n" + format_table(["workload", *bands, "episodes"], rows) + "\n", counts)


def _cell(loads: list[float]) -> str:
    """A count, with its loads where there are few enough to list."""
    if not loads or len(loads) > 3:
        return str(len(loads))
    return f"{len(loads)} ({', '.join(f'{load:.1f}' for load in sorted(loads))})"


if __name__ == "__main__":
    main()
