"""In-episode forecast calibration (``calibrate_forecasts=True``): what it does for schedulers that read forecasts.

    python benchmarks/forecast_calibration.py --out docs/results/forecast_calibration \\
        --trace runs/traces/bursty_heavy.csv        # about 12 minutes on 2 cores

Plays each scheduler on the env as it is and on the env with ``calibrate_forecasts=True`` (the
forecasts of an episode rescaled by the work its finished tasks needed; ``mara_env.forecast.in_episode``),
on **validation** curves and seeds 10,000,000 onwards, paired by seed, with ``edf_uniform`` (which
reads no forecasts) as the reference planner. Also reported: the log shift the calibration ends the
episodes with (negative: the forecaster over-forecast the remaining work). A trace (``--trace``)
is played as one more cell, as the generalisation table replays it (``mixed`` curves, 600 s slots,
32 nodes). Writes ``OUT.md`` and ``OUT.json`` (completion rates and shifts per episode).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from generalisation import table_size  # the sibling script (benchmarks/ is on sys.path)

from mara_agents.evaluation import evaluate
from mara_agents.mara.workers import map_forked
from mara_agents.stats import format_mean_ci, paired_difference

VAL_SEED = 10_000_000
DEFAULT_CELLS = [f"{w}:{load}:{m}" for m in (8, 32) for w in ("synthetic", "vision", "rl", "mixed", "charlm", "tabular")
                 for load in ("train", "heavy")]  # fmt: skip


def parse_cells(texts: list[str]) -> list[tuple[str, str, int]]:
    """``WORKLOAD:LOAD:NODES`` strings as tuples; ``ValueError`` naming a malformed one."""
    cells = []
    for text in texts:
        parts = text.split(":")
        if len(parts) != 3 or not parts[2].isdigit() or int(parts[2]) < 1:
            raise ValueError(f"a cell is WORKLOAD:LOAD:NODES with NODES >= 1, e.g. rl:train:32; got {text!r}")
        cells.append((parts[0], parts[1], int(parts[2])))
    return cells


def cell_env(cell: tuple[str, str, int], trace: Path | None, horizon: int) -> dict:
    """The env settings of one cell (``("trace", "-", 32)`` replays ``trace``)."""
    workload, load, nodes = cell
    env = dict(num_nodes=nodes, max_tasks=table_size(nodes), horizon=horizon, curve_split="val")
    if workload == "trace":
        return env | dict(workload="mixed", arrivals={"trace": str(trace), "slot_seconds": 600.0})
    return env | dict(workload=workload, load=load)


def _play(job: tuple) -> list[dict]:
    agent, calibrate, cell, seeds, horizon, trace = job
    env = cell_env(cell, trace, horizon) | ({"calibrate_forecasts": True} if calibrate else {})
    records = evaluate(agent, range(VAL_SEED, VAL_SEED + seeds), **env)
    return [{"completion_rate": r["completion_rate"], "log_shift": r.get("forecast_log_shift")} for r in records]


def report(rates: dict, shifts: dict, agents: list[str], cells: list[str], seconds: float) -> str:
    lines = [
        "# In-episode forecast calibration",
        "",
        "Mean completion rate on validation curves and seeds, without and with `calibrate_forecasts=True`; in "
        "brackets the calibrated minus the plain, paired by seed (points, 95% t-interval). `shift`: the mean log "
        f"shift at the episodes' end (negative: forecasts were too high). {seconds:.0f} s in all.",
        "",
        "| cell | shift | " + " | ".join(f"{a} | {a} calibrated" for a in agents) + " | edf_uniform |",
        "|---|---|" + "---|---|" * len(agents) + "---|",
    ]
    for cell in cells:
        row = [cell, f"{np.mean(shifts[cell]):+.2f}"]
        for agent in agents:
            plain, calibrated = rates[cell][f"{agent}"], rates[cell][f"{agent}+cal"]
            gain = format_mean_ci(paired_difference(calibrated, plain), 1, 100, True)
            row += [f"{np.mean(plain):.3f}", f"{np.mean(calibrated):.3f} ({gain})"]
        row.append(f"{np.mean(rates[cell]['edf_uniform']):.3f}")
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True, help="report path without suffix (.md and .json)")
    parser.add_argument("--agents", nargs="+", default=["srw", "mara_generalist"],
                        help="schedulers that read the env's forecasts")  # fmt: skip
    parser.add_argument("--cells", nargs="+", default=DEFAULT_CELLS, help="WORKLOAD:LOAD:NODES cells")
    parser.add_argument("--trace", type=Path, help="a trace played as one more cell (mixed curves, 32 nodes)")
    parser.add_argument("--seeds", type=int, default=8, help="validation episodes per cell and variant")
    parser.add_argument("--horizon", type=int, default=300, help="slots per episode")
    parser.add_argument("--jobs", type=int, default=2, help="processes")
    args = parser.parse_args()
    try:
        cells = parse_cells(args.cells) + ([("trace", "-", 32)] if args.trace else [])
    except ValueError as error:
        parser.error(str(error))
    if args.trace is not None and not args.trace.is_file():
        parser.error(f"--trace {args.trace} is not a file")
    began = time.time()
    variants = [(a, c) for a in args.agents for c in (False, True)] + [("edf_uniform", False)]
    jobs = [(a, c, cell, args.seeds, args.horizon, args.trace) for cell in cells for a, c in variants]
    played = map_forked(_play, jobs, args.jobs, desc="episodes with and without calibration")
    rates: dict[str, dict[str, list[float]]] = {}
    shifts: dict[str, list[float]] = {}
    for (agent, calibrate, cell, *_), records in zip(jobs, played):
        key = ":".join(map(str, cell))
        rates.setdefault(key, {})[agent + ("+cal" if calibrate else "")] = [r["completion_rate"] for r in records]
        if calibrate:
            shifts.setdefault(key, []).extend(r["log_shift"] for r in records)
    keys = [":".join(map(str, c)) for c in cells]
    text = report(rates, shifts, args.agents, keys, time.time() - began)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".md").write_text(text)
    summary = {"seeds": args.seeds, "rates": rates, "shifts": shifts}
    args.out.with_suffix(".json").write_text(json.dumps(summary, indent=1))
    print(text)


if __name__ == "__main__":
    main()
