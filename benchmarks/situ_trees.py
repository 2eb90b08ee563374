"""A probe of the big-cluster headroom: ``srw`` on in-situ forecasts refined by gradient-boosted trees.

    python benchmarks/situ_trees.py --out docs/results/situ_trees     # 15-20 minutes on 2 cores

At 32 nodes, ``srw`` on the true remaining work beats every scheduler of the generalisation table by
far on ``rl``, ``tabular`` and ``mixed``, so the headroom there lies in the forecasts. This asks how
much of it a stronger in-situ correction than ``flow_situ``'s head would recover, and whether it
carries to a trace. It records in-situ cases as ``examples/train_situ_head.py`` does (the flow's
answers in play on **training** curves, with the truth the simulator knows; seeds from
:data:`SEED_BASE`, which nothing else plays), fits per quantile a gradient-boosted tree model
(scikit-learn's pinball loss) of the log offset from the flow's median, and plays ``srw`` on
each variant against ``srw`` on ``flow``, on ``flow_situ`` and on the truth (``oracle``), and against
``edf_uniform``, on **validation**
curves and seeds 10,000,000 onwards, and on a trace (``--trace``). Variants:

- ``trees``: the in-situ head's own ten inputs (ratios only: blind to the unit of work);
- ``trees_scale``: those and the flow's log median itself, so the trees can learn this env's task sizes;
- ``trees_scale_without_W``: the same fitted without workload ``W``'s cases (``--leave-out W``).

Refined, as by ``flow_situ``, are the tasks the flow forecasts, has not seen reach the target and
does not deem out of reach. Nothing here is packaged: it is a probe, and the trees live in memory.
Writes ``OUT.md`` and ``OUT.json`` (completion rates per episode, by variant and cell).
"""

from __future__ import annotations

import argparse
import itertools
import json
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from generalisation import TRACE_CELL, parse_cells, table_size, validation_env  # the sibling script

from mara_agents.evaluation import evaluate
from mara_agents.mara.scenarios import VALIDATION_SEED
from mara_agents.mara.workers import map_forked
from mara_agents.stats import format_mean_ci, paired_difference
from mara_env.forecast import FORECASTERS
from mara_env.forecast.base import MAX_REMAINING, Forecast, History, validate_targets
from mara_env.forecast.flow import FlowForecaster
from mara_env.forecast.situ import CaseRecorder, record_cases, refinable, situ_features

SEED_BASE = 1_850_000_000  # recording seeds (train_situ_head.py records from 1,800,000,000)
QUANTILES = (0.1, 0.5, 0.9)
WORKLOADS = ("synthetic", "vision", "rl", "mixed", "charlm", "tabular")
FITTED: dict[str, list] = {}  # variant -> its three tree models, fitted before the players fork


def inputs(features: np.ndarray, log_median: np.ndarray, scale: bool) -> np.ndarray:
    """The trees' inputs: the in-situ head's features, with the flow's log median when ``scale``."""
    return np.column_stack([features, log_median]) if scale else features


class TreeSitu:
    """``flow`` with the refinable tasks' quantiles set by the fitted trees of ``variant``."""

    def __init__(self, variant: str) -> None:
        self.name, self.variant, self.flow = f"flow_{variant}", variant, FlowForecaster()

    def predict(self, histories: Sequence[History], targets: Sequence[float]) -> Forecast:
        targets = validate_targets(histories, targets)
        forecast = self.flow.predict(histories, targets)
        index = refinable(histories, forecast)
        if index.size == 0:
            return forecast
        quantiles = forecast.remaining[index]
        log_median = np.log(quantiles[:, 1])
        x = inputs(situ_features([histories[k] for k in index], targets[index], quantiles), log_median,
                   "scale" in self.variant)  # fmt: skip
        offsets = np.column_stack([model.predict(x) for model in FITTED[self.variant]])
        remaining = forecast.remaining.copy()
        remaining[index] = np.sort(np.minimum(np.exp(log_median[:, None] + offsets), MAX_REMAINING), axis=1)
        return Forecast(remaining, forecast.known.copy())


def fit_trees(cases: dict[str, np.ndarray], scale: bool, seed: int) -> list:
    """One gradient-boosted model per quantile of the log offset of the truth from the flow's median."""
    from sklearn.ensemble import HistGradientBoostingRegressor

    x = inputs(cases["features"], cases["log_median"], scale)
    y = cases["log_truth"] - cases["log_median"]
    models = []
    for q in QUANTILES:
        model = HistGradientBoostingRegressor(loss="quantile", quantile=q, max_iter=300, random_state=seed)
        models.append(model.fit(x, y))
    return models


def _record(scenario: dict) -> dict[str, np.ndarray]:
    def play(recorder: CaseRecorder, s: dict) -> None:
        env = {k: v for k, v in s.items() if k not in ("scheduler", "seed")}
        evaluate(s["scheduler"], [s["seed"]], forecaster=recorder, **env)

    cases = record_cases([scenario], play)
    return cases | {"workload": np.full(cases["log_truth"].size, scenario["workload"])}


def recording_grid(sizes: Sequence[int], horizon: int) -> list[dict]:
    """One training-curve episode per workload x load x size x recording scheduler."""
    grid = itertools.product(WORKLOADS, ("train", "heavy"), sizes, ("srw", "edf_uniform"))
    return [
        dict(workload=w, load=load, num_nodes=m, max_tasks=table_size(m), horizon=horizon, curve_split="train",
             scheduler=s, seed=SEED_BASE + i)
        for i, (w, load, m, s) in enumerate(grid)
    ]  # fmt: skip


def _play(job: tuple) -> list[float]:
    label, cell, seeds, horizon, trace = job
    env = validation_env(cell, trace, horizon)
    agent, forecaster = (label, {}) if label == "edf_uniform" else ("srw", {"forecaster": forecaster_of(label)})
    records = evaluate(agent, range(VALIDATION_SEED, VALIDATION_SEED + seeds), **env, **forecaster)
    return [r["completion_rate"] for r in records]


def forecaster_of(label: str) -> str | TreeSitu:
    """The forecaster behind ``srw@label``: a registered name or a fitted tree variant."""
    return label if label in FORECASTERS else TreeSitu(label)


def report(rates: dict[str, dict[str, list[float]]], labels: list[str], cells: list[str], seconds: float) -> str:
    lines = [
        "# `srw` on in-situ forecasts refined by trees (a probe)",
        "",
        f"Mean completion rate on validation curves and seeds; in brackets each variant minus `srw` on `flow`, "
        f"paired by seed (points, 95% t-interval). {seconds:.0f} s in all.",
        "",
        "| cell | " + " | ".join(f"srw@{x}" if x != "edf_uniform" else x for x in labels) + " |",
        "|---|" + "---|" * len(labels),
    ]
    for cell in cells:
        row = [cell]
        for label in labels:
            text = f"{np.mean(rates[cell][label]):.3f}"
            if label != "flow":
                text += f" ({format_mean_ci(paired_difference(rates[cell][label], rates[cell]['flow']), 1, 100, True)})"
            row.append(text)
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True, help="report path without suffix (.md and .json)")
    parser.add_argument("--cells", nargs="+", default=["rl:train:32", "rl:heavy:32", "tabular:train:32",
                        "tabular:heavy:32", "mixed:train:32", "mixed:heavy:32"],
                        help="WORKLOAD:LOAD:NODES cells played on validation curves")  # fmt: skip
    parser.add_argument("--trace", type=Path, help="a trace played as one more cell (mixed curves, 32 nodes)")
    parser.add_argument("--leave-out", default="rl", choices=WORKLOADS, help="the workload of the held-out variant")
    parser.add_argument("--record-sizes", nargs="+", type=int, default=[8, 32], help="cluster sizes recorded")
    parser.add_argument("--seeds", type=int, default=8, help="validation episodes per cell")
    parser.add_argument("--horizon", type=int, default=300, help="slots per episode")
    parser.add_argument("--jobs", type=int, default=2, help="processes")
    args = parser.parse_args()
    try:
        import sklearn  # noqa: F401
    except ImportError:
        raise SystemExit("situ_trees.py fits scikit-learn's trees: pip install -e '.[dev]' (or scikit-learn)") from None
    try:
        cells = parse_cells(args.cells) + ([TRACE_CELL] if args.trace else [])
    except ValueError as error:
        parser.error(str(error))
    from threadpoolctl import threadpool_limits

    began = time.time()
    with threadpool_limits(1):  # forked players after a multi-threaded OpenMP fit can hang; one thread predicts fast
        rates, count = play_all(args, cells)
    keys = [f"{w}:{load}:{m}" for w, load, m in cells]
    labels = list(rates[keys[0]])
    text = report(rates, labels, keys, time.time() - began)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".md").write_text(text)
    summary = {"cases": count, "seeds": args.seeds, "rates": rates}
    args.out.with_suffix(".json").write_text(json.dumps(summary, indent=1))
    print(text)


def play_all(args: argparse.Namespace, cells: list[tuple[str, str, int]]) -> tuple[dict, int]:
    """Record the cases, fit the variants, play every cell: completion rates by cell and label, and
    the number of cases."""
    parts = map_forked(_record, recording_grid(args.record_sizes, args.horizon), args.jobs, desc="cases")
    cases = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
    held = f"trees_scale_without_{args.leave_out}"
    kept = {k: v[cases["workload"] != args.leave_out] for k, v in cases.items()}
    FITTED.update(trees=fit_trees(cases, False, 0), trees_scale=fit_trees(cases, True, 0),
                  **{held: fit_trees(kept, True, 0)})  # fmt: skip
    labels = ["flow", "flow_situ", "trees", "trees_scale", held, "oracle", "edf_uniform"]
    jobs = [(label, cell, args.seeds, args.horizon, args.trace) for cell in cells for label in labels]
    played = map_forked(_play, jobs, args.jobs, desc="episodes of srw and edf_uniform")
    rates: dict[str, dict[str, list[float]]] = {}
    for (label, (w, load, m), *_), values in zip(jobs, played):
        rates.setdefault(f"{w}:{load}:{m}", {})[label] = values
    return rates, int(cases["log_truth"].size)


if __name__ == "__main__":
    main()
