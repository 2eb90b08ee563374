"""The generalisation table: every scheduler on every workload x load x cluster size, and a trace.

    python benchmarks/generalisation.py --jobs 2 --out docs/results/generalisation.md
    python benchmarks/generalisation.py --sizes 4 --workloads synthetic --seeds 2 --horizon 40   # a smoke run

For each workload, load and cluster size ``M`` (``K_max = max(16, 2M)``) every agent plays the same
seeds (50 where ``M <= 8``, ``--big-seeds`` above) with ``run_bench`` (one resumable folder per size
under ``--bench-dir``). MARA is ``--mara`` (by default the generalist, ``mara_generalist``; the
single-scenario ``mara`` is then one of the others). Per cell the report gives MARA's completion rate,
the best other non-oracle scheduler's, their difference paired by seed (95% t-interval), MARA's and
edf's utilisation, and the LP ceiling; the last lines are the mean of the paired differences over all
cells and a trace-replay row (``--trace``, a bursty heavy-tailed trace made with
``examples/traces/make_example_trace.py``). Writes the markdown report, the raw records as JSON
beside it (each labelled with its cell's ``nodes`` and whether it is the ``trace``), and the paired
differences as a heatmap (``.png``, where matplotlib is installed).

``--replay`` plays nothing and reads ``--mara``'s records from ``--others-from`` too: the committed
table summarised again, for instance once a new scheduler's records join it.

A new checkpoint against the committed table, playing only it (the other schedulers' records are read
from the table's raw records, on the same seeds):

    python benchmarks/generalisation.py --mara mara:RUN/checkpoint.pt --agents random round_robin uniform \
        edf srw lara laira --others-from docs/results/generalisation_full_m4.json.gz ... --out OUT.md
"""

from __future__ import annotations

import argparse
import gzip
import json
import time
from pathlib import Path

import numpy as np
from agents_by_preset import run_grid, write_report  # the sibling script (benchmarks/ is on sys.path)

import mara_agents
from mara_agents.bench import BenchConfig
from mara_agents.bench.figures import have_matplotlib, plot_differences
from mara_agents.stats import format_mean_ci, format_table, mean_ci95, paired_difference, significance
from mara_env.workloads import LOAD_PRESETS, WORKLOADS

HORIZON = 300  # slots per test episode; validation (mara_select.py) plays the same length
NON_ORACLE = ("oracle",)  # schedulers that know the needs: never "the best other scheduler"
HEADER = ["workload", "load", "M", "mara", "best other", "mara - best (paired)", "util mara", "util edf", "ceiling"]


def table_size(nodes: int) -> int:
    """``K_max`` for a cluster of ``nodes``: at least 16 rows, two per node."""
    return max(16, 2 * nodes)


TRACE_CELL = ("trace", "-", 32)  # the forecast probes' trace cell, at the table's trace size


def parse_cells(texts: list[str]) -> list[tuple[str, str, int]]:
    """``WORKLOAD:LOAD:NODES`` strings as tuples; ``ValueError`` naming a malformed one."""
    cells = []
    for text in texts:
        parts = text.split(":")
        if len(parts) != 3 or not parts[2].isdigit() or int(parts[2]) < 1:
            raise ValueError(f"a cell is WORKLOAD:LOAD:NODES with NODES >= 1, e.g. rl:train:32; got {text!r}")
        cells.append((parts[0], parts[1], int(parts[2])))
    return cells


def validation_env(cell: tuple[str, str, int], trace: Path | None, horizon: int) -> dict:
    """The env settings of one probe cell on validation curves; :data:`TRACE_CELL` replays ``trace`` as
    the table does (``mixed`` curves, 600 s slots). The probes (``situ_trees.py``,
    ``forecast_calibration.py``, ``clairvoyant_switch.py``) play their cells through it, on seeds from
    :data:`mara_agents.mara.scenarios.VALIDATION_SEED`."""
    workload, load, nodes = cell
    env = dict(num_nodes=nodes, max_tasks=table_size(nodes), horizon=horizon, curve_split="val")
    if workload == "trace":
        return env | dict(workload="mixed", arrivals={"trace": str(trace), "slot_seconds": 600.0})
    return env | dict(workload=workload, load=load)


def best_other(rates: dict[str, list[float]], mara: str = "mara") -> str:
    """The non-oracle scheduler other than ``mara`` with the highest mean completion rate in ``rates``."""
    others = [a for a in rates if a != mara and a not in NON_ORACLE]
    return max(others, key=lambda a: np.mean(rates[a]))


def cell_row(
    results: dict, key: tuple[str, str, str], agents: list[str], mara: str = "mara"
) -> tuple[list[str], dict | None]:
    """One report row for (workload, load, M) and ``mara``'s paired difference to the best other scheduler."""
    workload, load, nodes = key
    runs = {a: results[(a, workload, load, nodes)] for a in agents if (a, workload, load, nodes) in results}
    rates = {a: [r["completion_rate"] for r in recs] for a, recs in runs.items()}
    best = best_other(rates, mara)
    diff = paired_difference(rates[mara], rates[best]) if mara in rates else None
    util = {a: mean_ci95([r["utilisation"] for r in runs[a]])[0] for a in (mara, "edf") if a in runs}
    ceiling = mean_ci95([r["upper_bound_rate"] for r in runs[best]])[0]
    row = [
        workload,
        load,
        str(nodes),
        f"{np.mean(rates[mara]):.3f}" if mara in rates else "n/a",
        f"{best} {np.mean(rates[best]):.3f}",
        format_mean_ci(diff, digits=1, scale=100, signed=True, unit=" pp"),
        f"{util.get(mara, float('nan')):.2f}",
        f"{util.get('edf', float('nan')):.2f}",
        f"{ceiling:.3f}",
    ]
    return row, diff


def run_sizes(args: argparse.Namespace) -> dict[tuple[str, str, str, int], list[dict]]:
    """Every size's grid with ``run_bench``; records keyed by (agent, workload, load, M)."""
    results = {}
    for nodes in args.sizes:
        seeds = args.seeds if nodes <= 8 else args.big_seeds
        config = BenchConfig(
            tuple(args.agents), tuple(args.workloads), tuple(args.loads), seeds,
            num_nodes=nodes, max_tasks=table_size(nodes), horizon=args.horizon,
        )  # fmt: skip
        for (agent, workload, load), records in run_grid(config, args.bench_dir / f"M{nodes}", args.jobs).items():
            results[(agent, workload, load, nodes)] = records
    return results


def play(args: argparse.Namespace) -> dict[tuple[str, str, str, int], list[dict]]:
    """Every size's grid and, with ``--trace``, the trace cell: records keyed by (agent, workload, load, M)."""
    results = run_sizes(args)
    if args.trace is not None:
        results.update(run_trace(args))
    return results


def run_trace(args: argparse.Namespace) -> dict[tuple[str, str, str, int], list[dict]]:
    """The trace-replay cell at ``--trace-nodes`` nodes."""
    nodes = args.trace_nodes
    config = BenchConfig(
        tuple(args.agents), ("mixed",), ("train",), args.big_seeds, num_nodes=nodes, max_tasks=table_size(nodes),
        horizon=args.horizon, arrivals=str(args.trace), slot_seconds=args.slot_seconds,
    )  # fmt: skip
    records = run_grid(config, args.bench_dir / "trace", args.jobs)
    return {(agent, "trace", "-", nodes): recs for (agent, _, _), recs in records.items()}


def load_others(paths: list[Path], agents: list[str]) -> dict[tuple[str, str, str, int], list[dict]]:
    """The records of ``agents`` in raw records an earlier run wrote (``OUT.json``, or gzipped), by
    (agent, workload, load, M) as :func:`run_sizes` and :func:`run_trace` key them, each sorted by seed.

    ``SystemExit`` naming the file for one that is missing or not such records, or for an agent with
    no records in any of them."""
    others: dict[tuple[str, str, str, int], list[dict]] = {}
    for path in paths:
        try:
            opener = gzip.open if path.suffix == ".gz" else open
            with opener(path, "rt", encoding="utf-8") as handle:
                records = json.load(handle)
            for record in records:
                if record["agent"] in agents:
                    cell = ("trace", "-") if record["trace"] else (record["workload"], record["load"])
                    others.setdefault((record["agent"], *cell, int(record["nodes"])), []).append(record)
        except (OSError, ValueError, KeyError, TypeError) as error:
            raise SystemExit(
                f"--others-from {path}: not the raw records of a generalisation report "
                f"(a list of records with agent, workload, load, nodes, trace and seed): {error}"
            ) from None
    missing = sorted(set(agents) - {key[0] for key in others})
    if missing:
        raise SystemExit(f"--others-from: no records of {missing} in {[str(p) for p in paths]}")
    return {key: by_seed(records) for key, records in others.items()}


def by_seed(records: list[dict]) -> list[dict]:
    """``records`` in seed order: the paired difference pairs agents' records by position."""
    return sorted(records, key=lambda r: r["seed"])


def merge_others(
    played: dict[tuple[str, str, str, int], list[dict]],
    others: dict[tuple[str, str, str, int], list[dict]],
    agents: list[str],
) -> dict[tuple[str, str, str, int], list[dict]]:
    """``played`` (MARA's cells) with every other agent's records of the same cells from ``others``.

    ``SystemExit`` where another agent lacks a cell MARA played or has other seeds there: a paired
    difference needs the same episodes."""
    maras = {key: by_seed(records) for key, records in played.items()}
    merged = dict(maras)
    for (_, workload, load, nodes), records in maras.items():
        seeds = [r["seed"] for r in records]
        for agent in agents:
            theirs = others.get((agent, workload, load, nodes))
            if theirs is None or [r["seed"] for r in theirs] != seeds:
                found = "no records" if theirs is None else f"seeds {[r['seed'] for r in theirs]}"
                raise SystemExit(
                    f"--others-from: {agent} at {workload}/{load}, M={nodes} has {found}; MARA played seeds {seeds}"
                )
            merged[(agent, workload, load, nodes)] = theirs
    return merged


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--agents", nargs="+", default=list(mara_agents.SCHEDULERS))
    parser.add_argument(
        "--mara",
        default="mara_generalist",
        help="the agent spec compared with all the others (default the generalist; mara:PATH for a checkpoint); "
        "every other agent of --agents, the single-scenario `mara` included, is one of the others",
    )
    parser.add_argument("--workloads", nargs="+", default=sorted(WORKLOADS))
    parser.add_argument("--loads", nargs="+", default=list(LOAD_PRESETS))
    parser.add_argument("--sizes", nargs="+", type=int, default=[4, 8, 32, 64], help="cluster sizes M")
    parser.add_argument("--seeds", type=int, default=50, help="seeds per cell where M <= 8")
    parser.add_argument("--big-seeds", type=int, default=20, help="seeds per cell where M > 8, and for the trace")
    parser.add_argument("--horizon", type=int, default=HORIZON)
    parser.add_argument("--trace", type=Path, help="a .csv trace to replay (omit to skip the trace row)")
    parser.add_argument("--trace-nodes", type=int, default=32)
    parser.add_argument("--slot-seconds", type=float, default=600.0, help="seconds per slot of the trace")
    parser.add_argument("--jobs", type=int, default=2, help="worker processes")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--bench-dir", type=Path, default=Path("runs/generalisation"), help="run_bench's folders")
    parser.add_argument(
        "--others-from",
        nargs="+",
        type=Path,
        help="raw records (OUT.json[.gz]) of an earlier run: every agent of --agents but --mara is read from "
        "them, on the same seeds, and only --mara plays (a new checkpoint against the committed table)",
    )
    parser.add_argument(
        "--replay",
        action="store_true",
        help="play nothing: --mara's records too are read from --others-from, every cell they hold (the table "
        "summarised again, e.g. against a scheduler that joined it)",
    )
    args = parser.parse_args()
    if args.replay and args.others_from is None:
        parser.error("--replay reads every record from --others-from: give the files")
    args.agents = list(dict.fromkeys([*args.agents, args.mara]))
    others = [a for a in args.agents if a != args.mara]
    stored = None if args.others_from is None else load_others(args.others_from, others)
    start = time.perf_counter()
    if args.replay:
        results = load_others(args.others_from, [args.mara])
    else:
        results = play(args if stored is None else argparse.Namespace(**{**vars(args), "agents": [args.mara]}))
    if stored is not None:
        results = merge_others(results, stored, others)
    keys = list(dict.fromkeys((w, load, m) for (_, w, load, m) in results))
    rows, diffs = [], []
    for key in keys:
        row, diff = cell_row(results, key, args.agents, args.mara)
        rows.append(row)
        diffs.append(diff)
    note = (
        f"MARA is `{args.mara}`. Completion rate (mean over seeds; test-split curves, Poisson arrivals unless "
        f"a trace, {args.horizon} "
        f"slots, K_max = max(16, 2M)). 'best other' is the non-oracle scheduler with the highest mean in the "
        f"cell; the paired difference is per seed, in percentage points (95% t-interval); 'ceiling' is the LP "
        f"bound per arrived task. {summarise_differences(keys, diffs)} {time.perf_counter() - start:.0f} s."
    )
    write_report(args.out, note + "\n\n" + format_table(HEADER, rows) + "\n", labelled_records(results))
    if args.out is not None and have_matplotlib():
        write_heatmap(args.out.with_suffix(".png"), dict(zip(keys, diffs)), args.mara)


def labelled_records(results: dict[tuple[str, str, str, int], list[dict]]) -> dict[tuple, list[dict]]:
    """The records to write, each labelled with its cell: ``nodes`` (M) and ``trace`` (whether it replays
    the trace; a trace record's own ``workload`` and ``load`` are the curves and preset it replays with).
    Without the labels a report of several sizes could not tell their seeds apart."""
    return {
        key: [{**record, "nodes": key[3], "trace": key[1] == "trace"} for record in records]
        for key, records in results.items()
    }


def summarise_differences(keys: list[tuple[str, str, int]], diffs: list[dict | None]) -> str:
    """The mean paired difference over the cells (and per cluster size where there are several), and
    how many cells' 95% intervals lie wholly below and wholly above 0. A trace row's key is
    ``("trace", "-", M)``; it counts in the overall figures and in its size's."""
    paired = [(key, d) for key, d in zip(keys, diffs) if d is not None]
    if not paired:
        return "No cell has MARA's paired difference."
    means = [d["mean"] for _, d in paired]
    signs = [significance(d) for _, d in paired]
    below, above = signs.count(-1), signs.count(1)
    text = (
        f"Mean of the paired differences over the {len(means)} cells: {100 * np.mean(means):+.1f} pp; "
        f"cells where MARA is significantly below: {below}; significantly above: {above}."
    )
    sizes = sorted({key[2] for key, _ in paired})
    if len(sizes) > 1:
        by_size = ", ".join(
            f"M{m} {100 * np.mean([d['mean'] for key, d in paired if key[2] == m]):+.1f}" for m in sizes
        )
        text += f" By cluster size (pp): {by_size}."
    return text


def write_heatmap(path: Path, diffs: dict, mara: str) -> None:
    """The paired differences as a heatmap: a row per workload and load (the trace last), a column per M."""
    by_label = {(f"{w} {load}" if w != "trace" else "trace", f"M{m}"): d for (w, load, m), d in diffs.items()}
    rows = list(dict.fromkeys(row for row, _ in by_label))
    columns = [f"M{m}" for m in sorted({m for (_, _, m) in diffs})]
    title = f"{mara} minus the best other non-oracle scheduler\n(paired by seed; ▼ ▲: 95% interval below / above 0)"
    plot_differences(by_label, rows, columns, title, path)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
