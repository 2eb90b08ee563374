"""Fit the in-situ head of the ``flow_situ`` forecaster (``mara_env.forecast.situ``).

    python examples/train_situ_head.py --out runs/situ                 # record, fit, report (507 s on 2 cores)
    python examples/train_situ_head.py --out runs/situ2 --cases runs/situ/cases.npz runs/situ/test_cases.npz

Plays one episode per scenario (every workload x load x size x recording scheduler) on **training**
curves with seeds from 1,800,000,000 (no evaluation plays them), records every forecast the flow
makes there with the truth the simulator knows, and fits the head on them. It then records the
same grid on **test** curves (other seeds, ``srw`` only) and reports, per workload, how far the flow
and the refined forecasts are from the truth, and how far a head fitted without that workload is
(leave one family out). Writes ``cases.npz``, ``test_cases.npz``, ``flow_situ.pt`` and
``report.md`` into ``--out``; ``--cases TRAIN TEST`` refits from saved cases. Copy ``flow_situ.pt``
over ``mara_env/forecast/weights/`` (and run ``python -m mara_env.integrity --write``) to ship it.
"""

from __future__ import annotations

import argparse
import itertools
import time
from pathlib import Path

import numpy as np

from mara_agents import SCHEDULERS
from mara_agents.evaluation import evaluate
from mara_agents.mara.workers import map_forked
from mara_env.forecast.head import apply_head
from mara_env.forecast.situ import SITU_FEATURES, CaseRecorder, fit_situ_head, record_cases, save_head
from mara_env.workloads import LOAD_PRESETS, WORKLOADS

SITU_SEED_BASE = 1_800_000_000
TEST_SEED_OFFSET = 500_000


def table_size(nodes: int) -> int:
    """Table rows for ``nodes`` nodes, as the generalisation table sizes them."""
    return max(16, 2 * nodes)


def play(recorder: CaseRecorder, scenario: dict) -> None:
    """One episode of ``scenario`` with ``recorder`` as the env's forecaster."""
    env = {k: v for k, v in scenario.items() if k not in ("scheduler", "seed")}
    evaluate(scenario["scheduler"], [scenario["seed"]], forecaster=recorder, **env)


def _record_one(scenario: dict) -> dict[str, np.ndarray]:
    return record_cases([scenario], play)


def scenarios(args: argparse.Namespace, split: str) -> list[dict]:
    schedulers = args.schedulers if split == "train" else ["srw"]
    grid = itertools.product(args.workloads, args.loads, args.sizes, schedulers)
    offset = SITU_SEED_BASE + args.first_seed + (TEST_SEED_OFFSET if split == "test" else 0)
    return [
        dict(
            workload=w,
            load=load,
            num_nodes=m,
            max_tasks=table_size(m),
            horizon=args.horizon,
            curve_split=split,
            scheduler=s,
            seed=offset + i,
        )
        for i, (w, load, m, s) in enumerate(grid)
    ]


def record(grid: list[dict], jobs: int, label: str) -> dict[str, np.ndarray]:
    """Cases of every scenario of ``grid`` in ``jobs`` forked processes, with each case's workload."""
    parts = map_forked(_record_one, grid, jobs, desc=label, unit="episode")
    out = {k: np.concatenate([p[k] for p in parts]) for k in ("features", "log_median", "log_truth")}
    out["workload"] = np.concatenate([np.full(p["log_truth"].size, s["workload"]) for p, s in zip(parts, grid)])
    return out


def errors(head: dict | None, cases: dict[str, np.ndarray]) -> tuple[float, float]:
    """Median absolute log error of the median and the p10-p90 coverage, of the flow (``head=None``)
    or of the refined forecast."""
    if head is None:
        log_q = np.column_stack([cases["log_median"]] * 3)
        spread = cases["features"][:, :2]
        log_q = log_q + np.column_stack([-spread[:, 0], 0 * spread[:, 0], spread[:, 1]])
    else:
        log_q = apply_head(head, cases["features"], cases["log_median"])
    truth = cases["log_truth"]
    inside = (truth >= log_q[:, 0]) & (truth <= log_q[:, 2])
    return float(np.median(np.abs(log_q[:, 1] - truth))), float(inside.mean())


def subset(cases: dict[str, np.ndarray], keep: np.ndarray) -> dict[str, np.ndarray]:
    return {k: v[keep] for k, v in cases.items()}


def report(train: dict, test: dict, head: dict, args: argparse.Namespace, seconds: float) -> str:
    lines = [
        "# In-situ head of `flow_situ`",
        "",
        f"Fitted on {train['log_truth'].size:,} cases recorded on training curves; judged on "
        f"{test['log_truth'].size:,} cases from test curves (other seeds, `srw` play). Error: median "
        "|ln(p50 / truth)|; coverage: share of truths inside p10-p90 (0.80 is calibrated). "
        "'held out' is a head fitted without that workload's cases. "
        f"Steps {args.steps}, seed {args.seed}; {seconds:.0f} s in all.",
        "",
        "| workload | cases | flow error | situ error | held-out error | flow coverage | situ coverage |",
        "|---|---|---|---|---|---|---|",
    ]
    for workload in sorted(set(test["workload"].tolist())):
        part = subset(test, test["workload"] == workload)
        held = fit_situ_head(subset(train, train["workload"] != workload), seed=args.seed, steps=args.steps)
        (fe, fc), (se, sc), (he, _) = errors(None, part), errors(head, part), errors(held, part)
        lines.append(
            f"| {workload} | {part['log_truth'].size:,} | {fe:.3f} | {se:.3f} | {he:.3f} | {fc:.2f} | {sc:.2f} |"
        )
    (fe, fc), (se, sc) = errors(None, test), errors(head, test)
    lines.append(f"| all | {test['log_truth'].size:,} | {fe:.3f} | {se:.3f} | | {fc:.2f} | {sc:.2f} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True, help="directory for the cases, the head and the report")
    parser.add_argument("--workloads", nargs="+", default=sorted(WORKLOADS), choices=sorted(WORKLOADS))
    parser.add_argument("--loads", nargs="+", default=list(LOAD_PRESETS), choices=list(LOAD_PRESETS))
    parser.add_argument("--sizes", nargs="+", type=int, default=[8, 16, 32], help="numbers of nodes")
    parser.add_argument(
        "--schedulers", nargs="+", default=["srw", "uniform"], choices=sorted(SCHEDULERS), help="whose play is recorded"
    )
    parser.add_argument("--horizon", type=int, default=300, help="slots per episode")
    parser.add_argument("--first-seed", type=int, default=0, help="added to the seeds' base")
    parser.add_argument("--steps", type=int, default=3000, help="optimiser steps of the fit")
    parser.add_argument("--seed", type=int, default=0, help="seed of the fit")
    parser.add_argument("--jobs", type=int, default=2, help="processes for the recording")
    parser.add_argument("--cases", nargs=2, type=Path, metavar=("TRAIN", "TEST"), help="refit from saved cases")
    args = parser.parse_args()
    if min(args.sizes) < 1 or args.horizon < 1 or args.jobs < 1 or args.steps < 1 or args.first_seed < 0:
        parser.error("--sizes, --horizon, --jobs and --steps must be >= 1 and --first-seed >= 0")
    args.out.mkdir(parents=True, exist_ok=True)
    start = time.time()
    if args.cases:
        train, test = (load_cases(path) for path in args.cases)
    else:
        train = record(scenarios(args, "train"), args.jobs, "training cases")
        test = record(scenarios(args, "test"), args.jobs, "test cases")
        np.savez_compressed(args.out / "cases.npz", **train)
        np.savez_compressed(args.out / "test_cases.npz", **test)
    head = fit_situ_head(train, seed=args.seed, steps=args.steps)
    save_head(head, args.out / "flow_situ.pt")
    text = report(train, test, head, args, time.time() - start)
    (args.out / "report.md").write_text(text)
    print(text)


def load_cases(path: Path) -> dict[str, np.ndarray]:
    """Cases saved by this script; ``SystemExit`` naming the file if it is not such a file."""
    try:
        with np.load(path, allow_pickle=False) as data:
            cases = {k: data[k] for k in ("features", "log_median", "log_truth", "workload")}
    except (OSError, ValueError, KeyError, EOFError) as err:
        raise SystemExit(f"{path} is not a cases file of this script: {err}") from err
    if cases["features"].ndim != 2 or cases["features"].shape[1] != len(SITU_FEATURES):
        raise SystemExit(
            f"{path} holds cases with {cases['features'].shape[1:]} features; the head reads {len(SITU_FEATURES)}"
        )
    return cases


if __name__ == "__main__":
    main()
