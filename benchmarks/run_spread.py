"""How far apart two trained policies play, cell by cell, on the same episodes: run-to-run spread.

    R=docs/results/generalisation G=warm_start_rule_gate.pt
    python benchmarks/run_spread.py --out docs/results/generalist_run_spread.md \\
        --reference "seventy-second, seed 0=${R}_seventy_second_mara.json.gz:mara:runs/g72/$G" \\
        --run "seventy-third, seed 1=${R}_seventy_third_mara.json.gz:mara:runs/g73/$G" \\
              "sixty-eighth, shipped=${R}_default_run_mara.json.gz:mara:runs/default_run/$G" \\
              "seventy-first=${R}_seventy_first_mara.json.gz:mara:runs/g71/$G"

Reads the raw records ``benchmarks/generalisation.py`` writes and plays nothing. Each run is
``NAME=FILE:LABEL``: the records labelled ``LABEL`` in ``FILE``. Every ``--run`` is compared with the
``--reference`` on the cells and seeds both played: per cell the paired difference (run minus reference,
per seed, 95% t-interval, in points). Were two runs the same policy, about 1 cell in 20 would differ
significantly by chance; two seeds of one recipe show how much more than that training itself moves a
cell, and so how large a difference between two recipes must be before one run of each can tell them apart.

Writes the markdown report (a summary row per run, then every cell), the per-cell figures as JSON
beside it and, where matplotlib is installed, each run's differences by cell (``.png``).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from generalisation import load_others  # the sibling script
from lead_by_size import parse_source

from mara_agents.bench.figures import DPI, have_matplotlib, save_figure
from mara_agents.stats import format_mean_ci, format_table, paired_difference, significance
from mara_env.forecast.evaluation import write_report

Cell = tuple[str, str, int]  # workload ("trace" for a trace cell), load ("-" there), M


def parse_run(text: str) -> tuple[str, Path, str]:
    """``NAME=FILE:LABEL`` as (name, file, label)."""
    name, sep, source = text.partition("=")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"expected NAME=FILE.json[.gz]:LABEL (a name for the run first), got {text!r}")
    return (name.strip(), *parse_source(source))


def run_cells(path: Path, label: str) -> dict[Cell, dict[int, float]]:
    """The completion rate of the records labelled ``label`` in ``path``, by cell and seed."""
    return {
        key[1:]: {int(r["seed"]): float(r["completion_rate"]) for r in records}
        for key, records in load_others([path], [label]).items()
    }


def cell_differences(run: dict[Cell, dict[int, float]], reference: dict[Cell, dict[int, float]]) -> dict[Cell, dict]:
    """Per cell both played, the paired difference ``run - reference`` over the seeds both played
    (``{"mean", "ci95", "n"}``, as rates). ``SystemExit`` where they share no cell with a seed in common."""
    diffs = {}
    for cell in sorted(set(run) & set(reference), key=table_order):
        seeds = sorted(set(run[cell]) & set(reference[cell]))
        if seeds:
            diffs[cell] = paired_difference([run[cell][s] for s in seeds], [reference[cell][s] for s in seeds])
    if not diffs:
        raise SystemExit("the run and the reference share no cell and seed: were they played on the same table?")
    return diffs


def table_order(cell: Cell) -> tuple[int, str, str]:
    """The table's order: by size, then workload and load."""
    return cell[2], cell[0], cell[1]


def summary_row(name: str, diffs: dict[Cell, dict]) -> list[str]:
    """Cells, mean and spread over cells of the mean differences (pp), cells below / above, the largest."""
    means = np.array([100 * d["mean"] for d in diffs.values()])
    signs = [significance(d) for d in diffs.values()]
    largest = max(diffs, key=lambda c: abs(diffs[c]["mean"]))
    spread = f"{means.std(ddof=1):.2f}" if len(means) > 1 else "n/a"
    return [
        name,
        str(len(means)),
        f"{means.mean():+.2f}",
        spread,
        str(signs.count(-1)),
        str(signs.count(1)),
        f"{cell_name(largest)}: {format_mean_ci(diffs[largest], digits=1, scale=100, signed=True)}",
    ]


def cell_name(cell: Cell) -> str:
    workload, load, nodes = cell
    return f"M{nodes} {workload}" if workload == "trace" else f"M{nodes} {workload} {load}"


def cell_rows(runs: dict[str, dict[Cell, dict]]) -> list[list[str]]:
    """A row per cell any run shares with the reference: each run's difference, ``**`` where significant."""
    cells = sorted({c for diffs in runs.values() for c in diffs}, key=table_order)
    rows = []
    for cell in cells:
        shown = []
        for diffs in runs.values():
            diff = diffs.get(cell)
            text = "" if diff is None else format_mean_ci(diff, digits=1, scale=100, signed=True)
            shown.append(f"**{text}**" if diff is not None and significance(diff) else text)
        rows.append([cell_name(cell), *shown])
    return rows


def plot(path: Path, runs: dict[str, dict[Cell, dict]], reference: str) -> None:
    """Each run's mean difference per cell with its interval, cells in table order, one marker per run."""
    from matplotlib.figure import Figure

    cells = sorted({c for diffs in runs.values() for c in diffs}, key=table_order)
    figure = Figure(figsize=(max(8, 0.16 * len(cells)), 4), dpi=DPI, layout="constrained")
    axis = figure.subplots()
    offsets = np.linspace(-0.25, 0.25, len(runs)) if len(runs) > 1 else [0.0]
    for (name, diffs), offset in zip(runs.items(), offsets):
        xs = [i + offset for i, c in enumerate(cells) if c in diffs]
        means = [100 * diffs[c]["mean"] for c in cells if c in diffs]
        halves = [100 * np.nan_to_num(diffs[c]["ci95"]) for c in cells if c in diffs]
        axis.errorbar(xs, means, yerr=halves, fmt="o", ms=3, lw=0.8, label=name)
    axis.axhline(0, color="grey", lw=0.8)
    axis.set_xticks(range(len(cells)), [cell_name(c) for c in cells], rotation=90, fontsize=5)
    axis.set(ylabel=f"minus {reference} (pp)", title="Paired difference per cell, 95% interval")
    axis.legend(fontsize=7)
    save_figure(figure, path)
    print(f"wrote {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reference", type=parse_run, required=True, metavar="NAME=FILE:LABEL")
    parser.add_argument(
        "--run", nargs="+", type=parse_run, required=True, metavar="NAME=FILE:LABEL", help="compared with --reference"
    )
    parser.add_argument(
        "--out", type=Path, required=True, help="the markdown report (OUT.md, with OUT.json and OUT.png)"
    )
    args = parser.parse_args()
    names = [args.reference[0], *(name for name, _, _ in args.run)]
    if len(set(names)) != len(names):
        parser.error(f"every run needs its own name, got {names}")
    reference = run_cells(*args.reference[1:])
    runs = {name: cell_differences(run_cells(path, label), reference) for name, path, label in args.run}
    header = ["run", "cells", "mean (pp)", "sd over cells (pp)", "below", "above", "largest difference (pp)"]
    text = (
        f"Each run minus the reference, `{args.reference[0]}` (`{args.reference[2]}` in `{args.reference[1]}`), per "
        "cell on the seeds both played: the paired difference in completion rate, in points, with its 95% t-interval. "
        "'below' and 'above' count the cells whose interval lies wholly below or above 0; were the two the same "
        "policy, about 1 cell in 20 would by chance.\n\n"
        + format_table(header, [summary_row(name, diffs) for name, diffs in runs.items()])
        + "\n\nPer cell (significant differences in bold):\n\n"
        + format_table(["cell", *runs], cell_rows(runs))
        + "\n"
    )
    records = [
        {"run": name, "workload": c[0], "load": c[1], "nodes": c[2], **d}
        for name, diffs in runs.items()
        for c, d in diffs.items()
    ]
    write_report(args.out, text, records)
    if have_matplotlib():
        plot(args.out.with_suffix(".png"), runs, args.reference[0])


if __name__ == "__main__":
    main()
