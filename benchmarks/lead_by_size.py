"""How MARA's lead over the best other scheduler changes with the cluster size, from generalisation records.

    python benchmarks/lead_by_size.py --out docs/results/generalist_lead_by_size.md \\
        --mara docs/results/generalisation_default_run_mara.json.gz:mara:runs/default_run/warm_start_rule_gate.pt \\
               docs/results/generalist_sizes_12_24.json.gz:mara_generalist \\
        --others-from docs/results/generalisation_full_m{4,8,32,64}.json.gz \\
            docs/results/generalisation_edf_uniform_records.json.gz docs/results/generalist_sizes_12_24.json.gz

Reads the raw records ``benchmarks/generalisation.py`` writes and plays nothing. ``--mara FILE:LABEL``
names where MARA's records are: those labelled ``LABEL`` in ``FILE`` (give several pairs when one policy's
records sit in several files under several labels, a checkpoint path in one and a registered name in
another; a cell must come from one pair only). ``--others-from`` are read for every agent of ``--agents``,
which must have MARA's seeds in each of MARA's cells.

Per cluster size ``M``: the mean over the cells of MARA's paired difference to the cell's best other
non-oracle scheduler (as ``generalisation.py`` computes it), how many cells lie significantly below and
above, and the mean wasted work (the share of credited work spent on tasks that expired) and
utilisation of MARA and of each cell's best other scheduler; then the mean difference per workload and
size. Writes the markdown report, the per-cell figures as JSON beside it and, where matplotlib is installed,
a plot of the mean difference and of the wasted work by size (``.png``).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from generalisation import NON_ORACLE, best_other, load_others, merge_others  # the sibling script

from mara_agents.bench.figures import DPI, have_matplotlib, save_figure
from mara_agents.stats import format_table, paired_difference, significance
from mara_env.forecast.evaluation import write_report

MARA = "mara"  # the label MARA's records carry here, whatever they were labelled in their files
OTHERS = ["random", "round_robin", "uniform", "edf", "srw", "lara", "laira", "edf_uniform"]  # the table's
Cell = tuple[str, str, int]
METRICS = ("wasted_work", "utilisation")  # per episode, averaged per cell


def parse_source(text: str) -> tuple[Path, str]:
    """``FILE:LABEL`` split at its first colon after the file's name (a label may hold colons itself)."""
    for suffix in (".json.gz:", ".json:"):
        if suffix in text:
            file, label = text.split(suffix, 1)
            if label:
                return Path(file + suffix[:-1]), label
    raise argparse.ArgumentTypeError(
        f"expected FILE.json[.gz]:LABEL (the records labelled LABEL in FILE), got {text!r}"
    )


def mara_records(sources: list[tuple[Path, str]]) -> dict[tuple[str, str, str, int], list[dict]]:
    """MARA's records by (``MARA``, workload, load, M), from each ``(file, label)``; ``SystemExit`` for a
    cell two sources both hold."""
    records: dict[tuple[str, str, str, int], list[dict]] = {}
    for path, label in sources:
        for (_, workload, load, nodes), cell in load_others([path], [label]).items():
            key = (MARA, workload, load, nodes)
            if key in records:
                raise SystemExit(
                    f"--mara: {workload}/{load}, M={nodes} is in more than one source ({path}:{label} too)"
                )
            records[key] = cell
    return records


def cell_summary(results: dict, cell: Cell, agents: list[str]) -> dict:
    """MARA's paired difference to the cell's best other scheduler, and both one's wasted work and utilisation."""
    rates = {a: [r["completion_rate"] for r in results[(a, *cell)]] for a in [*agents, MARA] if (a, *cell) in results}
    best = best_other(rates, MARA)
    diff = paired_difference(rates[MARA], rates[best])
    mean = {a: {m: float(np.mean([r[m] for r in results[(a, *cell)]])) for m in METRICS} for a in (MARA, best)}
    return {"diff": diff, "best": best, "mara": mean[MARA], "other": mean[best]}


def size_rows(summaries: dict[Cell, dict]) -> list[list[str]]:
    """One row per cluster size: cells, mean difference, cells below / above, wasted work and utilisation."""
    rows = []
    for nodes in sorted({cell[2] for cell in summaries}):
        cells = [s for cell, s in summaries.items() if cell[2] == nodes]
        signs = [significance(s["diff"]) for s in cells]
        seeds = sorted({s["diff"]["n"] for s in cells})
        means = [np.mean([s[who][metric] for s in cells]) for metric in METRICS for who in ("mara", "other")]
        counts = [len(cells), "/".join(map(str, seeds))]
        lead = f"{np.mean([lead_of(s) for s in cells]):+.1f}"
        rows.append(
            [
                str(nodes),
                *map(str, counts),
                lead,
                str(signs.count(-1)),
                str(signs.count(1)),
                *(f"{m:.3f}" for m in means),
            ]
        )
    return rows


def workload_rows(summaries: dict[Cell, dict]) -> tuple[list[str], list[list[str]]]:
    """The mean difference (pp) per workload (over its loads) and size: a header and a row per workload."""
    sizes = sorted({cell[2] for cell in summaries})
    rows = [
        [
            workload,
            *(f"{lead:+.1f}" if np.isfinite(lead) else "" for lead in by_size(summaries, sizes, lead_of, workload)),
        ]
        for workload in dict.fromkeys(cell[0] for cell in summaries)
    ]
    return ["workload", *(f"M{m}" for m in sizes)], rows


def lead_of(summary: dict) -> float:
    """A cell's paired difference, in points."""
    return 100 * summary["diff"]["mean"]


def by_size(summaries: dict[Cell, dict], sizes: list[int], value, workload: str | None = None) -> list[float]:
    """The mean of ``value(summary)`` over the cells of each size (of ``workload`` alone if given); NaN where none."""
    return [
        float(np.mean([value(s) for c, s in summaries.items() if c[2] == m and workload in (None, c[0])] or [np.nan]))
        for m in sizes
    ]


def plot(path: Path, summaries: dict[Cell, dict]) -> None:
    """Left: the mean paired difference by size, over all cells (bold) and per workload; right: the mean
    wasted work of MARA and of the cells' best other schedulers by size."""
    from matplotlib.figure import Figure

    sizes = sorted({cell[2] for cell in summaries})
    figure = Figure(figsize=(11, 4), dpi=DPI, layout="constrained")
    lead, waste = figure.subplots(1, 2)

    for workload in dict.fromkeys(cell[0] for cell in summaries):
        lead.plot(sizes, by_size(summaries, sizes, lead_of, workload), marker=".", lw=1, label=workload)
    lead.plot(sizes, by_size(summaries, sizes, lead_of), "k-o", lw=2.5, label="all cells")
    lead.axhline(0, color="grey", lw=0.8)
    lead.set(xlabel="cluster size M (nodes)", ylabel="MARA minus the best other (pp)", title="Paired difference")
    for who, style, label in (("mara", "k-o", "MARA"), ("other", "r--s", "best other scheduler")):
        waste.plot(sizes, by_size(summaries, sizes, lambda s, who=who: s[who]["wasted_work"]), style, label=label)
    waste.set(
        xlabel="cluster size M (nodes)", ylabel="share of credited work", title="Wasted work (tasks that expired)"
    )
    for axis in (lead, waste):
        axis.set_xscale("log")
        axis.minorticks_off()
        axis.set_xticks(sizes, [str(m) for m in sizes])
        axis.legend(fontsize=7)
    save_figure(figure, path)
    print(f"wrote {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--mara", nargs="+", type=parse_source, required=True, metavar="FILE:LABEL", help="where MARA's records are"
    )
    parser.add_argument("--others-from", nargs="+", type=Path, required=True, help="raw records of the other agents")
    parser.add_argument("--agents", nargs="+", default=OTHERS, help="the other schedulers (default the table's)")
    parser.add_argument(
        "--out", type=Path, required=True, help="the markdown report (OUT.md, with OUT.json and OUT.png)"
    )
    args = parser.parse_args()
    if unknown := sorted(set(args.agents) & ({MARA} | set(NON_ORACLE))):
        parser.error(f"--agents: {unknown} cannot be a best other scheduler; name non-oracle schedulers")
    results = merge_others(mara_records(args.mara), load_others(args.others_from, args.agents), args.agents)
    cells = sorted({key[1:] for key in results if key[0] == MARA}, key=lambda c: (c[2], c[0], c[1]))
    summaries = {cell: cell_summary(results, cell, args.agents) for cell in cells}
    header = [
        "M",
        "cells",
        "seeds",
        "mean difference (pp)",
        "below",
        "above",
        "wasted MARA",
        "wasted best other",
        "util MARA",
        "util best other",
    ]
    workload_header, by_workload = workload_rows(summaries)
    text = (
        f"MARA's records: {', '.join(f'`{label}` in `{path}`' for path, label in args.mara)}. Per cluster size, the "
        f"mean over the cells of MARA's paired difference to the best other non-oracle scheduler of each cell "
        f"({', '.join(args.agents)}), "
        "the cells whose 95% interval lies wholly below and above 0, and the mean wasted work and utilisation of MARA "
        "and of each cell's best other scheduler.\n\n"
        + format_table(header, size_rows(summaries))
        + "\n\nMean difference (pp) per workload, over its loads:\n\n"
        + format_table(workload_header, by_workload)
        + "\n"
    )
    records = [{"workload": c[0], "load": c[1], "nodes": c[2], **s} for c, s in summaries.items()]
    write_report(args.out, text, records)
    if have_matplotlib():
        plot(args.out.with_suffix(".png"), summaries)


if __name__ == "__main__":
    main()
