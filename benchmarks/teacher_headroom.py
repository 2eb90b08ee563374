"""How much a teacher that picks the better planner episode by episode could gain, from a played grid.

    python benchmarks/teacher_headroom.py runs/generalisation/M4 runs/generalisation/M8 --out docs/results/headroom

Reads the per-episode records (``results.csv``) of ``run_bench`` folders, as ``benchmarks/generalisation.py``
leaves them, and reports per cell (workload x load x ``M``): the best single non-oracle scheduler's
mean (what MARA is compared with), and how far above it the per-episode maximum over each candidate
set lies. A student that cloned such a teacher perfectly, and knew from the observation which
candidate each episode needs, could lead the table by at most that much; the oracle's lead is shown
for scale. Nothing is played: it reads what the grid recorded.
"""

from __future__ import annotations

import argparse
import csv
from collections import defaultdict
from pathlib import Path

import numpy as np

from mara_agents.stats import format_table
from mara_env.forecast.evaluation import write_report

CANDIDATE_SETS = (("srw", "edf"), ("srw", "edf", "uniform"))


def read_cells(folder: Path) -> dict[tuple[str, str, int], dict[str, dict[int, float]]]:
    """``{(workload, load, M): {agent: {seed: completion rate}}}`` of one ``run_bench`` folder."""
    path = folder / "results.csv"
    if not path.is_file():
        raise ValueError(f"{folder} has no results.csv: pass run_bench folders (e.g. runs/generalisation/M8)")
    if not (folder.name.startswith("M") and folder.name[1:].isdigit()):
        raise ValueError(f"cannot tell M from the folder name {folder.name!r}: expected M<nodes>, e.g. M8")
    nodes = int(folder.name[1:])
    cells: dict = defaultdict(lambda: defaultdict(dict))
    with path.open(newline="") as handle:
        for row in csv.DictReader(handle):
            cells[(row["workload"], row["load"], nodes)][row["agent"]][int(row["seed"])] = float(row["completion_rate"])
    return cells


def headroom(agents: dict[str, dict[int, float]], candidate_sets=CANDIDATE_SETS) -> dict[str, float]:
    """The best single scheduler's mean and each candidate set's per-episode maximum above it."""
    seeds = sorted(agents["srw"])
    others = [name for name in agents if name != "oracle" and not name.startswith("mara")]  # MARA is the student
    best_name = max(others, key=lambda n: np.mean(list(agents[n].values())))
    best = float(np.mean([agents[best_name][s] for s in seeds]))
    out = {"best": best, "best_name": best_name, "oracle": float(np.mean([agents["oracle"][s] for s in seeds])) - best}
    for names in candidate_sets:
        per_episode = [max(agents[name][s] for name in names) for s in seeds]
        out["/".join(names)] = float(np.mean(per_episode)) - best
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folders", nargs="+", type=Path, help="run_bench folders (e.g. runs/generalisation/M8)")
    parser.add_argument("--out", type=Path, help="markdown report (and .json beside it)")
    parser.add_argument(
        "--also", help="an agent of the grid (e.g. mara:runs/old.pt) added to srw/edf as a third candidate"
    )
    args = parser.parse_args()
    candidate_sets = CANDIDATE_SETS + ((("srw", "edf", args.also),) if args.also else ())
    results = {}
    for folder in args.folders:
        for key, agents in read_cells(folder).items():
            if args.also and args.also not in agents:
                raise ValueError(f"{folder} has no records of {args.also!r}; it has {sorted(agents)}")
            results[key] = headroom(agents, candidate_sets)
    sets = ["/".join(names) for names in candidate_sets]
    rows = [
        [
            w,
            load,
            str(m),
            f"{r['best_name']} {r['best']:.3f}",
            *(f"{100 * r[s]:+.1f}" for s in sets),
            f"{100 * r['oracle']:+.1f}",
        ]
        for (w, load, m), r in sorted(results.items(), key=lambda item: (item[0][2], item[0][0], item[0][1]))
    ]
    means = [f"{100 * np.mean([r[s] for r in results.values()]):+.1f}" for s in [*sets, "oracle"]]
    rows.append(["mean", "", "", "", *means])
    header = ["workload", "load", "M", "best single", *(f"best of {s} per episode" for s in sets), "oracle"]
    intro = (
        "Gain, in points of completion rate, of the per-episode best of each candidate set over the best "
        f"single non-oracle scheduler of the cell; {len(results)} cells from {', '.join(map(str, args.folders))}."
    )
    markdown = f"# Teacher headroom: the better planner episode by episode\n\n{intro}\n\n{format_table(header, rows)}"
    if args.out:
        write_report(args.out, markdown, {f"{w}|{load}|{m}": r for (w, load, m), r in results.items()})
    else:
        print(markdown)


if __name__ == "__main__":
    main()
