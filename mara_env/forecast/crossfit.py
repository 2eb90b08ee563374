"""Cross-fitted training data for the flow's quantile head (:mod:`mara_env.forecast.head`).

The head must learn how wrong the flow is on a kind of curve it has never seen, so its training
rows are of two kinds:

- **out of family**: for every bank ``G``, forecasts on ``G``'s ``train`` curves by a flow trained on
  every bank but ``G`` (``flow_without_G.pt`` in a folder the user names, trained now if missing and
  reused after, so all of them are trained once);
- **in family**: forecasts on every bank's ``val`` curves by the flow the head will ship with.

No ``test`` curve is used. Each case observes a task as the benchmark does (one point per slot, a
per-task rate of 0.5-2 node-slots per slot) up to a fraction of its need drawn per case,
log-uniformly in :data:`FRACTIONS`, never the benchmark's fixed 10/25/50%.

For a leave-one-family-out evaluation of family ``F`` (:mod:`mara_env.forecast.holdout`), the head
is fitted the same way with ``F`` left out of both kinds, on forecasts by ``flow_without_F``: no
curve of ``F`` is used by the flow or by its head.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from mara_env.forecast.evaluation import make_cases
from mara_env.forecast.flow import FlowForecaster
from mara_env.forecast.head import fit_head

FRACTIONS = (0.03, 0.9)
OUT_OF_FAMILY_CASES = 900
IN_FAMILY_CASES = 600
#: training settings of the leave-one-bank-out flows (short: one model per bank)
TRAIN_SETTINGS = {
    "steps": 12000,
    "batch": 256,
    "lr": 2e-3,
    "seed": 0,
    "augment_strength": 1.0,
    "synthetic_share": 0.3,
    "shares": {"vision": 0.15, "rl": 0.15},
}


def without_weights(bank: str, folder: Path, progress: bool = False) -> Path:
    """The raw flow trained on every bank but ``bank`` (trained now if ``folder`` lacks it)."""
    from mara_env.forecast.train import resolve_banks, train

    path = Path(folder) / f"flow_without_{bank}.pt"
    if not path.is_file():
        train(resolve_banks(["all"], exclude=[bank]), out=path, progress=progress, calibrate=False, **TRAIN_SETTINGS)
    return path


def head_rows(net, bank: str, split: str, count: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(features, raw log median, log truth)`` of ``count`` cases of ``bank``'s ``split`` by the raw ``net``."""
    histories, targets, truth = make_cases(bank, FRACTIONS, count, seed, split=split)
    features, log_median, index = FlowForecaster.from_net(net, seed=seed).head_inputs(histories, targets)
    return features, log_median, np.log(np.maximum(truth[index], 1e-3))


def fit_crossfit_head(
    net,
    banks: Sequence[str],
    folder: Path,
    exclude: str | None = None,
    seed: int = 0,
    progress: bool = False,
) -> dict:
    """The quantile head for ``net``, fitted on out-of-family and in-family rows of ``banks`` minus ``exclude``."""
    from mara_env.forecast.flow_net import load_flow_net

    parts = []
    for bank in banks:
        if bank == exclude:
            continue
        without = load_flow_net(without_weights(bank, folder, progress))
        parts.append(head_rows(without, bank, "train", OUT_OF_FAMILY_CASES, seed + 101))
        parts.append(head_rows(net, bank, "val", IN_FAMILY_CASES, seed + 17))
    features, log_median, log_truth = (np.concatenate(p) for p in zip(*parts))
    return {**fit_head(features, log_median, log_truth, seed=seed), "excluded": exclude or ""}
