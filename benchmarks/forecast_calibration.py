"""In-episode forecast calibration (``calibrate_forecasts=True``): what it does for schedulers that read forecasts.

    python benchmarks/forecast_calibration.py --out docs/results/forecast_calibration \\
        --trace runs/traces/bursty_heavy.csv        # about 10 minutes on 2 cores

Plays each scheduler on the env as it is and on the env with ``calibrate_forecasts=True`` (the
forecasts of an episode rescaled by the work its finished tasks needed; ``mara_env.forecast.in_episode``),
on **validation** curves and seeds 10,000,000 onwards, paired by seed, with ``edf_uniform`` (which
reads no forecasts) as the reference planner. Also reported: the log shift the calibration ends the
episodes with (negative: the forecaster over-forecast the remaining work). A trace (``--trace``)
is played as one more cell, as the generalisation table replays it (``mixed`` curves, 600 s slots,
32 nodes). Writes ``OUT.md`` and ``OUT.json`` (completion rates and shifts per episode).

A policy trained on calibrated forecasts (``examples/train_mara.py --calibrate-forecasts``) asks for
them, so it is given with ``--calibrated-agents SPEC`` and played on calibrated envs only. Below the
table, every variant's lead over the better of ``srw`` and ``edf_uniform`` on the same kind of env
(plain or calibrated), paired by seed and averaged over the cells. ``--reuse JSON`` takes the episodes
an earlier run of this script (same seeds) already played, so adding a policy replays only it.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from generalisation import TRACE_CELL, parse_cells, validation_env  # the sibling script

from mara_agents.evaluation import evaluate
from mara_agents.mara.scenarios import VALIDATION_SEED
from mara_agents.mara.workers import map_forked
from mara_agents.stats import format_mean_ci, paired_difference, significance

DEFAULT_CELLS = [f"{w}:{load}:{m}" for m in (8, 32) for w in ("synthetic", "vision", "rl", "mixed", "charlm", "tabular")
                 for load in ("train", "heavy")]  # fmt: skip


def reused(path: Path, seeds: int) -> tuple[dict, dict]:
    """The rates and shifts of an earlier run's ``OUT.json``; ``SystemExit`` if it played other seeds."""
    summary = json.loads(path.read_text())
    if summary.get("seeds") != seeds:
        raise SystemExit(f"--reuse {path}: it played {summary.get('seeds')} seeds per cell, this run {seeds}")
    return summary["rates"], summary["shifts"]


def _play(job: tuple) -> list[dict]:
    agent, calibrate, cell, seeds, horizon, trace = job
    env = validation_env(cell, trace, horizon) | ({"calibrate_forecasts": True} if calibrate else {})
    records = evaluate(agent, range(VALIDATION_SEED, VALIDATION_SEED + seeds), **env)
    return [{"completion_rate": r["completion_rate"], "log_shift": r.get("forecast_log_shift")} for r in records]


def lead(rates: dict[str, list[float]], label: str) -> dict[str, float]:
    """``label``'s paired difference to the better (by mean) of ``srw`` and ``edf_uniform`` on the same
    kind of env: ``srw+cal`` for a calibrated label, ``srw`` for a plain one."""
    srw = "srw+cal" if label.endswith("+cal") else "srw"
    best = max((srw, "edf_uniform"), key=lambda name: np.mean(rates[name]))
    return paired_difference(rates[label], rates[best])


def lead_lines(rates: dict, labels: list[str], cells: list[str]) -> list[str]:
    """Per label: its mean lead over the cells, and in how many it is significantly below or above."""
    lines = ["", "Lead over the better of `srw` and `edf_uniform` on the same env (points; cells below / above "
             "at 95%):", ""]  # fmt: skip
    for label in labels:
        leads = [lead(rates[cell], label) for cell in cells]
        below = sum(significance(x) < 0 for x in leads)
        above = sum(significance(x) > 0 for x in leads)
        mean = 100 * np.mean([x["mean"] for x in leads])
        lines.append(f"- `{label}`: {mean:+.1f} over {len(cells)} cells; {below} below, {above} above")
    return lines


def report(rates: dict, shifts: dict, agents: list[str], cells: list[str], seconds: float, also: list[str] = ()) -> str:
    lines = [
        "# In-episode forecast calibration",
        "",
        "Mean completion rate on validation curves and seeds, without and with `calibrate_forecasts=True`; in "
        "brackets the calibrated minus the plain, paired by seed (points, 95% t-interval). `shift`: the mean log "
        f"shift at the episodes' end (negative: forecasts were too high). {seconds:.0f} s for the episodes this "
        "run played.",
        "",
        "| cell | shift | "
        + " | ".join(f"{a} | {a} calibrated" for a in agents)
        + " | edf_uniform |"
        + "".join(f" {a} (trained calibrated) |" for a in also),
        "|---|---|" + "---|---|" * len(agents) + "---|" + "---|" * len(also),
    ]
    for cell in cells:
        row = [cell, f"{np.mean(shifts[cell]):+.2f}"]
        for agent in agents:
            plain, calibrated = rates[cell][f"{agent}"], rates[cell][f"{agent}+cal"]
            gain = format_mean_ci(paired_difference(calibrated, plain), 1, 100, True)
            row += [f"{np.mean(plain):.3f}", f"{np.mean(calibrated):.3f} ({gain})"]
        row.append(f"{np.mean(rates[cell]['edf_uniform']):.3f}")
        row += [f"{np.mean(rates[cell][a + '+cal']):.3f}" for a in also]
        lines.append("| " + " | ".join(row) + " |")
    labels = [label for a in agents for label in (a, a + "+cal") if a != "srw"] + [a + "+cal" for a in also]
    lines += lead_lines(rates, labels, cells) if labels else []
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True, help="report path without suffix (.md and .json)")
    parser.add_argument("--agents", nargs="+", default=["srw", "mara_generalist"],
                        help="schedulers that read the env's forecasts")  # fmt: skip
    parser.add_argument("--cells", nargs="+", default=DEFAULT_CELLS, help="WORKLOAD:LOAD:NODES cells")
    parser.add_argument(
        "--calibrated-agents",
        nargs="+",
        default=[],
        help="policies trained on calibrated forecasts, played on calibrated envs only",
    )
    parser.add_argument("--reuse", type=Path, help="OUT.json of an earlier run (same seeds): its episodes are kept")
    parser.add_argument("--trace", type=Path, help="a trace played as one more cell (mixed curves, 32 nodes)")
    parser.add_argument("--seeds", type=int, default=8, help="validation episodes per cell and variant")
    parser.add_argument("--horizon", type=int, default=300, help="slots per episode")
    parser.add_argument("--jobs", type=int, default=2, help="processes")
    args = parser.parse_args()
    try:
        cells = parse_cells(args.cells) + ([TRACE_CELL] if args.trace else [])
    except ValueError as error:
        parser.error(str(error))
    if args.trace is not None and not args.trace.is_file():
        parser.error(f"--trace {args.trace} is not a file")
    rates, shifts = reused(args.reuse, args.seeds) if args.reuse else ({}, {})
    began = time.time()
    variants = [(a, c) for a in args.agents for c in (False, True)] + [("edf_uniform", False)]
    variants += [(a, True) for a in args.calibrated_agents]
    jobs = [(a, c, cell, args.seeds, args.horizon, args.trace) for cell in cells for a, c in variants
            if a + ("+cal" if c else "") not in rates.get(":".join(map(str, cell)), {})]  # fmt: skip
    played = map_forked(_play, jobs, args.jobs, desc="episodes with and without calibration")
    for (agent, calibrate, cell, *_), records in zip(jobs, played):
        key = ":".join(map(str, cell))
        rates.setdefault(key, {})[agent + ("+cal" if calibrate else "")] = [r["completion_rate"] for r in records]
        if calibrate and agent in args.agents:  # the shifts the compared schedulers' episodes end with
            shifts.setdefault(key, []).extend(r["log_shift"] for r in records)
    keys = [":".join(map(str, c)) for c in cells]
    text = report(rates, shifts, args.agents, keys, time.time() - began, args.calibrated_agents)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".md").write_text(text)
    summary = {"seeds": args.seeds, "rates": rates, "shifts": shifts}
    args.out.with_suffix(".json").write_text(json.dumps(summary, indent=1))
    print(text)


if __name__ == "__main__":
    main()
