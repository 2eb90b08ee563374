"""How each scheduler played a cell of the generalisation table: completion, wasted work, switches.

    python benchmarks/cell_diagnostics.py docs/results/generalisation_full_m32.json.gz \\
        --cells rl/heavy rl/extreme tabular/train --agents mara_generalist uniform srw edf

Reads the per-seed rows that ``benchmarks/generalisation.py`` writes (``.json`` or ``.json.gz``) and
gives, per cell (``WORKLOAD/LOAD``, optionally ``@M`` for one cluster size) and scheduler, the mean
over seeds of the completion rate, the wasted work (share of the credited work spent on tasks that
expired), node switches per task, utilisation and the mean shortfall of the tasks that failed. It
plays nothing: it explains where a difference in the table comes from.
"""

from __future__ import annotations

import argparse
import gzip
import json
from pathlib import Path

from mara_agents.stats import format_table, summarize

METRICS = ("completion_rate", "wasted_work", "switches_per_task", "utilisation", "mean_failure_shortfall")


def load_rows(path: Path) -> list[dict]:
    """The per-seed rows of a generalisation report (gzipped or not)."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as handle:
        rows = json.load(handle)
    if not isinstance(rows, list) or not all(isinstance(r, dict) and "agent" in r for r in rows):
        raise ValueError(f"{path}: not the per-seed rows of benchmarks/generalisation.py (a list of records)")
    return rows


def parse_cell(text: str) -> tuple[str, str, int | None]:
    """``WORKLOAD/LOAD`` or ``WORKLOAD/LOAD@M``; ``trace`` alone is the trace-replay cell."""
    if text == "trace":
        return "trace", "", None
    cell, _, size = text.partition("@")
    workload, slash, load = cell.partition("/")
    if not slash or not workload or not load or (size and not size.isdigit()):
        raise ValueError(f"cell {text!r}: expected WORKLOAD/LOAD or WORKLOAD/LOAD@M (e.g. rl/heavy@32), or trace")
    return workload, load, int(size) if size else None


def cell_means(rows: list[dict], cell: tuple[str, str, int | None], agent: str) -> dict[str, float] | None:
    """The mean of each metric over the seeds ``agent`` played in ``cell``; None if it played none."""
    workload, load, nodes = cell
    if workload == "trace":
        picked = [r for r in rows if r["agent"] == agent and r.get("trace")]
    else:
        picked = [
            r
            for r in rows
            if r["agent"] == agent and r["workload"] == workload and r["load"] == load and not r.get("trace")
            and (nodes is None or r.get("nodes") == nodes)
        ]  # fmt: skip
    if not picked:
        return None
    summary = summarize(picked)
    return {"seeds": len(picked), **{m: summary[m]["mean"] for m in METRICS}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("rows", nargs="+", type=Path, help="per-seed rows (.json or .json.gz) of generalisation.py")
    parser.add_argument("--cells", nargs="+", required=True, help="WORKLOAD/LOAD[@M], or trace")
    parser.add_argument("--agents", nargs="+", default=["mara_generalist", "uniform", "srw", "edf"])
    parser.add_argument("--out", type=Path, help="also write the table to this markdown file")
    args = parser.parse_args()
    try:
        cells = [parse_cell(text) for text in args.cells]
    except ValueError as error:
        parser.error(str(error))
    rows = [row for path in args.rows for row in load_rows(path)]
    table = []
    for text, cell in zip(args.cells, cells):
        for agent in args.agents:
            means = cell_means(rows, cell, agent)
            if means is not None:
                table.append([text, agent, str(means["seeds"]), *(f"{means[m]:.3f}" for m in METRICS)])
    if not table:
        parser.error("no row matches those cells and agents")
    header = ["cell", "agent", "seeds", "completed", "wasted work", "switches/task", "util", "shortfall"]
    text = format_table(header, table)
    print(text)
    if args.out is not None:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
