"""Completion rate of the packaged schedulers on every workload x load preset (test curves).

    python benchmarks/heuristics_by_preset.py --seeds 20 --out docs/results/heuristics_by_preset.md

Writes a markdown table (mean ± 95% CI over the seeds) and prints it.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from tqdm.auto import tqdm

import mara_agents
from mara_env.workloads import LOAD_PRESETS, WORKLOADS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--agents", nargs="+", default=list(mara_agents.SCHEDULERS))
    parser.add_argument("--workloads", nargs="+", default=sorted(WORKLOADS))
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    seeds = range(args.seeds)
    cells = [(w, load) for w in args.workloads for load in LOAD_PRESETS]
    start = time.perf_counter()
    header = "| workload | load | " + " | ".join(args.agents) + " |"
    lines = [header, "|" + "---|" * (len(args.agents) + 2)]
    for workload, load in tqdm(cells, desc="presets"):
        cells_text = []
        for agent in args.agents:
            summary = mara_agents.summarize(mara_agents.evaluate(agent, seeds, workload=workload, load=load))
            rate = summary["completion_rate"]
            cells_text.append(f"{rate['mean']:.3f} ± {rate['ci95']:.3f}")
        lines.append(f"| {workload} | {load} | " + " | ".join(cells_text) + " |")
    note = (
        f"Completion rate, mean ± 95% CI over seeds 0..{args.seeds - 1}; 8 nodes, 16 rows, 300 slots, "
        f"Poisson arrivals, test-split curves. {time.perf_counter() - start:.0f} s to run."
    )
    text = note + "\n\n" + "\n".join(lines) + "\n"
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)


if __name__ == "__main__":
    main()
