"""Leave-one-family-out evaluation: how a forecaster does on curves of a kind it has never seen.

For a held-out bank ``F``, the flow is trained on every other bank (``train`` splits), its quantile
head is fitted without ``F`` too (:mod:`mara_env.forecast.crossfit`), and both are tested on cases
drawn from **all** of ``F``'s curves (none was seen).
``wls`` and ``dkf`` fit nothing, so they are scored on the same cases. The per-bank weights are
written to a folder the user names (default ``runs/holdout``) and reused when present, so an
interrupted run resumes.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from mara_env.forecast.evaluation import make_cases, score
from mara_env.workloads.recorded import NEW_BANKS, RECORDED_BANKS, RecordedWorkload

DEFAULT_DIR = Path("runs") / "holdout"
PREFIXES = (0.1, 0.25, 0.5)
FORECASTERS = ("flow", "wls", "dkf")


def holdout_families(name: str) -> list[str]:
    """``all`` = the new families; else one recorded bank; ``ValueError`` otherwise."""
    if name == "all":
        return list(NEW_BANKS)
    if name not in RECORDED_BANKS:
        raise ValueError(f"holdout family must be 'all' or one of {RECORDED_BANKS}, got {name!r}")
    return [name]


def weights_for(family: str, folder: Path = DEFAULT_DIR, progress: bool = False) -> Path:
    """Weights of the flow trained without ``family``, with a quantile head fitted without it too
    (made now if ``folder`` lacks them; the leave-one-bank-out flows they need are kept there)."""
    from mara_env.forecast.crossfit import fit_crossfit_head, without_weights
    from mara_env.forecast.flow_net import load_flow_net, save_flow_net
    from mara_env.forecast.head import to_storable
    from mara_env.forecast.train import resolve_banks

    path = Path(folder) / f"flow_holdout_{family}.pt"
    if not path.is_file():
        raw = without_weights(family, folder, progress)
        net = load_flow_net(raw)
        head = fit_crossfit_head(net, resolve_banks(["all"]), folder, exclude=family, progress=progress)
        save_flow_net(net, path, {**net.extra, "calibration": to_storable(head)})
    return path


def evaluate_family(
    family: str,
    weights: Path,
    forecasters: Sequence[str] = FORECASTERS,
    prefixes: Sequence[float] = PREFIXES,
    tasks: int = 300,
    seed: int = 0,
) -> list[dict]:
    """One row per (forecaster, prefix) on cases from every curve of ``family``."""
    from mara_env.forecast import make

    workload = RecordedWorkload(family, "all")
    rows = []
    for prefix in prefixes:
        histories, targets, truth = make_cases(workload, prefix, tasks, seed)
        for name in forecasters:
            forecaster = make(name, weights=weights) if name == "flow" else make(name)
            row = score(forecaster, histories, targets, truth)
            rows.append({"workload": family, "held_out": True, "forecaster": name, "prefix": prefix, **row})
    return rows


def summarise(rows: Sequence[dict]) -> list[dict]:
    """Per family: each forecaster's error averaged over the prefixes, flow's coverage (mean over the
    prefixes, and its range), and whether the acceptance bar holds (flow <= 0.8 x wls and <= dkf;
    coverage in [0.7, 0.9] over the family's cases, and separately at every prefix)."""
    out = []
    for family in dict.fromkeys(r["workload"] for r in rows):
        mine = [r for r in rows if r["workload"] == family]
        mean = {
            name: float(np.mean([r["median_abs_log_ratio"] for r in mine if r["forecaster"] == name]))
            for name in dict.fromkeys(r["forecaster"] for r in mine)
        }
        coverage = [r["coverage"] for r in mine if r["forecaster"] == "flow"]
        entry = {"workload": family, **{f"{k}_error": v for k, v in mean.items()}}
        if coverage:
            pooled = float(np.mean(coverage))
            entry.update(flow_coverage=pooled, flow_coverage_min=min(coverage), flow_coverage_max=max(coverage))
        if {"flow", "wls", "dkf"} <= set(mean):
            entry["error_ok"] = mean["flow"] <= 0.8 * mean["wls"] and mean["flow"] <= mean["dkf"]
            entry["coverage_ok"] = 0.7 <= pooled <= 0.9  # the family's cases, every prefix together
            entry["coverage_ok_every_prefix"] = min(coverage) >= 0.7 and max(coverage) <= 0.9
        out.append(entry)
    return out


def format_summary(summary: Sequence[dict]) -> str:
    """A markdown table of :func:`summarise`."""
    lines = [
        "| workload | flow | wls | dkf | flow / wls | flow coverage: mean (min-max over prefixes) | bar met: error"
        " / coverage (at every prefix) |",
        "|---|---|---|---|---|---|---|",
    ]
    yes = {True: "yes", False: "no"}
    for s in summary:
        coverage = f"{s['flow_coverage']:.2f} ({s['flow_coverage_min']:.2f}-{s['flow_coverage_max']:.2f})"
        bar = f"{yes[s['error_ok']]} / {yes[s['coverage_ok']]} ({yes[s['coverage_ok_every_prefix']]})"
        lines.append(
            f"| {s['workload']} | {s['flow_error']:.3f} | {s['wls_error']:.3f} | {s['dkf_error']:.3f} | "
            f"{s['flow_error'] / s['wls_error']:.2f} | {coverage} | {bar} |"
        )
    return "\n".join(lines)
