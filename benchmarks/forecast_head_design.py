"""Design variants of the flow's quantile head, scored leave-one-family-out and in distribution.

    python benchmarks/forecast_head_design.py --dir runs/holdout --out docs/results/forecast_head_design

Uses the leave-one-bank-out flows in ``--dir`` (trained first if missing, as by
``python -m mara_env.forecast.train``) and the shipped flow. For every variant and every new family
``F``: the head is fitted on the cross-fitted cases without ``F`` (as :mod:`mara_env.forecast.crossfit`
does) and scored on cases of all of ``F``'s curves forecast by the flow trained without ``F``; the
in-distribution row fits on every bank and scores the shipped flow on the ``test`` splits. Variants:

- ``raw``: no head (the flow's own samples);
- ``linear``: one linear quantile regression per quantile (pinball loss) on the nine inputs;
- ``mlp``: the shipped head (two hidden layers of 32);
- ``mlp_spread_only``: the shipped head's interval, the raw median kept;
- ``mlp_work_done``: the shipped head plus two inputs it deliberately lacks, ``ln(p50 / work done)``
  and ``ln(points observed)``;
- ``mlp_work_done_fixed``: the same, fitted on cases observed at the benchmark's own fractions
  (10/25/50%) instead of fractions drawn in [3%, 90%]: it learns the benchmark's design.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import torch

from mara_env.forecast import crossfit
from mara_env.forecast.evaluation import make_cases, write_report
from mara_env.forecast.flow import WEIGHTS, FlowForecaster
from mara_env.forecast.flow_net import load_flow_net
from mara_env.forecast.head import apply_head, fit_head
from mara_env.workloads.recorded import NEW_BANKS, RecordedWorkload

BANKS = ("synthetic", "vision", "rl", *NEW_BANKS)
PREFIXES = (0.1, 0.25, 0.5)
VARIANTS = ("raw", "linear", "mlp", "mlp_spread_only", "mlp_work_done", "mlp_work_done_fixed")


def rows(net, source, split: str, prefix, count: int, seed: int) -> dict:
    """Head inputs, two work-done inputs, raw log quantiles, log truth and prefix of some cases."""
    histories, targets, truth = make_cases(source, prefix, count, seed, split=split)
    forecaster = FlowForecaster.from_net(net, seed=seed)
    features, log_median, index = forecaster.head_inputs(histories, targets)
    raw = forecaster.predict(histories, targets)  # uncalibrated: from_net has no head
    done = np.array([histories[i][0][-1] for i in index])
    points = np.array([len(histories[i][0]) for i in index])
    extra = np.column_stack([log_median - np.log(done), np.log(points)])
    fraction = np.full(len(index), prefix if isinstance(prefix, float) else np.nan)
    log_raw = np.log(np.maximum(raw.remaining[index], 1e-3))
    return {"x": features, "extra": extra, "median": log_median, "raw": log_raw,
            "truth": np.log(np.maximum(truth[index], 1e-3)), "prefix": fraction}  # fmt: skip


def join(parts: list[dict]) -> dict:
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}


def pinball_linear(x: np.ndarray, y: np.ndarray, steps: int = 600) -> np.ndarray:
    """Coefficients ``(1 + d, 3)`` of linear p10/p50/p90 regressions (Adam on the pinball loss)."""
    z = torch.as_tensor(np.column_stack([np.ones(len(x)), x]), dtype=torch.float64)
    target = torch.as_tensor(y, dtype=torch.float64)[:, None]
    coef = torch.zeros((z.shape[1], 3), dtype=torch.float64, requires_grad=True)
    levels = torch.tensor([[0.1, 0.5, 0.9]], dtype=torch.float64)
    optimiser = torch.optim.Adam([coef], lr=0.05)
    for _ in range(steps):
        error = target - z @ coef
        loss = torch.maximum(levels * error, (levels - 1) * error).mean()
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    return coef.detach().numpy()


def predict(variant: str, train: dict, test: dict) -> np.ndarray:
    """``(n, 3)`` log quantiles of ``test`` by ``variant`` fitted on ``train``."""
    if variant == "raw":
        return test["raw"]
    if variant == "linear":
        mean, scale = train["x"].mean(0), train["x"].std(0) + 1e-6
        coef = pinball_linear((train["x"] - mean) / scale, train["truth"] - train["median"])
        out = np.column_stack([np.ones(len(test["x"])), (test["x"] - mean) / scale]) @ coef
        return test["median"][:, None] + np.sort(out, axis=1)
    work_done = variant.startswith("mlp_work_done")
    x_train = np.column_stack([train["x"], train["extra"]]) if work_done else train["x"]
    x_test = np.column_stack([test["x"], test["extra"]]) if work_done else test["x"]
    head = fit_head(x_train, train["median"], train["truth"])
    out = apply_head(head, x_test, test["median"])
    if variant == "mlp_spread_only":
        out = out - out[:, 1:2] + test["median"][:, None]
    return out


def score(pred: np.ndarray, test: dict) -> list[dict]:
    result = []
    for p in PREFIXES:
        k = test["prefix"] == p
        error = float(np.median(np.abs(pred[k, 1] - test["truth"][k])))
        coverage = float(np.mean((pred[k, 0] <= test["truth"][k]) & (test["truth"][k] <= pred[k, 2])))
        result.append({"prefix": p, "error": error, "coverage": coverage})
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", type=Path, default=Path("runs") / "holdout")
    parser.add_argument("--out", type=Path, default=Path("docs/results/forecast_head_design"))
    args = parser.parse_args()
    torch.set_num_threads(1)
    nets = {b: load_flow_net(crossfit.without_weights(b, args.dir, progress=True)) for b in BANKS}
    shipped = load_flow_net(WEIGHTS)
    spread, fixed = crossfit.FRACTIONS, PREFIXES
    out_of_family = {b: rows(nets[b], b, "train", spread, 900, 101) for b in BANKS}
    out_fixed = {b: join([rows(nets[b], b, "train", p, 300, 101) for p in fixed]) for b in BANKS}
    results = []
    for family in (*NEW_BANKS, "in distribution"):
        held = family != "in distribution"
        flow = nets[family] if held else shipped
        kept = [b for b in BANKS if b != family]
        in_family = {b: rows(flow, b, "val", spread, 600, 17) for b in kept}
        in_fixed = {b: join([rows(flow, b, "val", p, 200, 17) for p in fixed]) for b in kept}
        train = join([out_of_family[b] for b in kept] + list(in_family.values()))
        train_fixed = join([out_fixed[b] for b in kept] + list(in_fixed.values()))
        tests = (
            [join([rows(flow, RecordedWorkload(family, "all"), "test", p, 300, 0) for p in fixed])]
            if held
            else [join([rows(flow, b, "test", p, 300, 0) for p in fixed]) for b in BANKS]
        )
        for variant in VARIANTS:
            fit_on = train_fixed if variant.endswith("_fixed") else train
            for test, name in zip(tests, [family] if held else BANKS):
                for r in score(predict(variant, fit_on, test), test):
                    results.append({"variant": variant, "workload": name, "held_out": held, **r})
        print(f"{family}: done", flush=True)
    write_report(args.out, report(results), results)


def report(results: list[dict]) -> str:
    lines = [
        "| variant | held out: error per family (mean of 3 prefixes) | held out: coverage range"
        " | test splits: error range | test splits: coverage range |",
        "|---|---|---|---|---|",
    ]
    for variant in VARIANTS:
        mine = [r for r in results if r["variant"] == variant]
        per = {}
        for r in mine:
            per.setdefault((r["held_out"], r["workload"]), []).append(r)
        held = {w: float(np.mean([r["error"] for r in v])) for (h, w), v in per.items() if h}
        inside = [float(np.mean([r["error"] for r in v])) for (h, _), v in per.items() if not h]
        out_cover = [r["coverage"] for r in mine if r["held_out"]]
        in_cover = [r["coverage"] for r in mine if not r["held_out"]]
        lines.append(
            f"| {variant} | {' '.join(f'{w} {e:.2f}' for w, e in held.items())} | "
            f"{min(out_cover):.2f}-{max(out_cover):.2f} | {min(inside):.2f}-{max(inside):.2f} | "
            f"{min(in_cover):.2f}-{max(in_cover):.2f} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
