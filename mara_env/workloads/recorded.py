"""Workloads backed by curve banks (``vision``, ``rl``, the families of :data:`NEW_BANKS`, and
``mixed``), and the ``synthetic`` bank.

``load_bank(name)`` returns a whole bank; a workload draws task bodies from one split of it, so that
the ``test`` split can be kept away from anything that is fitted or trained.
"""

from __future__ import annotations

from functools import cache

import numpy as np

from mara_env.workloads.bank import BANK_DIR, SPLITS, CurveBank, read_bank
from mara_env.workloads.base import TaskDraw, TaskScale
from mara_env.workloads.synthetic import GRID_POINTS, SyntheticWorkload, sample_curves

#: The recorded banks made on CPU by the builders of issue 14 (one model/data family each).
NEW_BANKS = ("charlm", "wordlm", "shapes", "seq", "tabular", "gbt", "autoenc")
RECORDED_BANKS = ("vision", "rl", *NEW_BANKS)
BANK_NAMES = ("synthetic", *RECORDED_BANKS, "mixed")
SYNTHETIC_BANK_SIZE = 2000
SYNTHETIC_BANK_SEED = 20261129
# Share of its first loss a curve must lose to make a task (flat curves cannot carry a target).
MIN_DROP = 0.1

# Our choices: vision models scale well over data-parallel nodes and have mid-size checkpoints;
# RL training is sampling-bound (scales worse) with small checkpoints.
SCALES = {
    "synthetic": TaskScale(),
    "vision": TaskScale(scaling_range=(0.7, 0.95), switch_factor_range=(0.5, 1.5)),
    "rl": TaskScale(scaling_range=(0.4, 0.8), switch_factor_range=(0.3, 1.0)),
    # language models: large checkpoints, good data-parallel scaling
    "charlm": TaskScale(scaling_range=(0.7, 0.95), switch_factor_range=(0.8, 2.0)),
    "wordlm": TaskScale(scaling_range=(0.75, 0.95), switch_factor_range=(1.0, 2.0)),
    "shapes": TaskScale(scaling_range=(0.7, 0.95), switch_factor_range=(0.5, 1.5)),
    "seq": TaskScale(scaling_range=(0.6, 0.9), switch_factor_range=(0.5, 1.5)),
    # small tabular models and boosted trees: tiny checkpoints, poor data-parallel scaling
    "tabular": TaskScale(scaling_range=(0.3, 0.7), switch_factor_range=(0.2, 0.6)),
    "gbt": TaskScale(scaling_range=(0.3, 0.6), switch_factor_range=(0.2, 0.6)),
    "autoenc": TaskScale(scaling_range=(0.5, 0.85), switch_factor_range=(0.3, 1.0)),
}


@cache
def _synthetic_bank() -> CurveBank:
    losses, families = sample_curves(np.random.default_rng(SYNTHETIC_BANK_SEED), SYNTHETIC_BANK_SIZE)
    steps = np.arange(GRID_POINTS, dtype=np.float64)
    meta = [
        {"key": f"synthetic/index={i}", "family": f, "seed": SYNTHETIC_BANK_SEED, "x_unit": "grid_point"}
        for i, f in enumerate(families)
    ]
    info = {"loss": "parametric learning-curve families with AR(1) log-noise", "generated": True}
    return CurveBank("synthetic", [steps] * len(meta), list(losses), meta, info)


@cache
def _stored_bank(name: str) -> CurveBank:
    path = BANK_DIR / f"{name}.npz"
    if not path.is_file():
        raise ValueError(
            f"curve bank {name!r} is not installed at {path}; build it with "
            f"`python -m mara_env.workloads.build {name} --install` (needs the 'banks' extra)"
        )
    return read_bank(path)


def load_bank(name: str) -> CurveBank:
    """The curve bank ``name`` (one of :data:`BANK_NAMES`; ``mixed`` = all the others together)."""
    if name not in BANK_NAMES:
        raise ValueError(f"bank must be one of {BANK_NAMES}, got {name!r}")
    if name == "synthetic":
        return _synthetic_bank()
    if name != "mixed":
        return _stored_bank(name)
    parts = [load_bank(n) for n in ("synthetic", *RECORDED_BANKS)]
    return CurveBank(
        "mixed",
        [x for b in parts for x in b.steps],
        [y for b in parts for y in b.losses],
        [{**m, "bank": b.name} for b in parts for m in b.meta],
        {"parts": [b.name for b in parts]},
    )


def _evenly_spaced(steps: np.ndarray, losses: np.ndarray) -> np.ndarray:
    """Losses on evenly spaced steps (resampled linearly if the recording was not)."""
    gaps = np.diff(steps)
    if np.allclose(gaps, gaps[0], rtol=1e-3):
        return np.asarray(losses, dtype=np.float64)
    return np.interp(np.linspace(steps[0], steps[-1], steps.size), steps, losses)


class RecordedWorkload:
    """Task bodies from one split of a curve bank.

    Parameters
    ----------
    bank:
        The bank name (``synthetic`` or one of :data:`RECORDED_BANKS`).
    split:
        ``train``, ``val``, ``test``, or ``all`` (every curve: for a family no model has seen).
    scale:
        How curves become tasks (default: the bank's entry in :data:`SCALES`).
    """

    def __init__(self, bank: str, split: str = "train", scale: TaskScale | None = None) -> None:
        if split not in (*SPLITS, "all"):
            raise ValueError(f"curve_split must be one of {(*SPLITS, 'all')}, got {split!r}")
        self.name = bank
        self.split = split
        self.scale = scale or SCALES[bank]
        curves = load_bank(bank) if split == "all" else load_bank(bank).split(split)
        kept = [
            (_evenly_spaced(x, y), m["family"])
            for x, y, m in zip(curves.steps, curves.losses, curves.meta)
            if np.min(y) <= (1.0 - MIN_DROP) * y[0]
        ]
        if not kept:
            raise ValueError(f"bank {bank!r} split {split!r} has no curve that drops by {MIN_DROP:.0%}")
        self.curves = [c for c, _ in kept]
        self.families = [f for _, f in kept]

    def sample_tasks(self, rng: np.random.Generator, count: int) -> list[TaskDraw]:
        pick = rng.integers(len(self.curves), size=count)
        return self.scale.draw(rng, [self.curves[i] for i in pick], [self.families[i] for i in pick])


class MixedWorkload:
    """Each task from ``synthetic`` or one of :data:`RECORDED_BANKS`, every bank with equal probability."""

    name = "mixed"

    def __init__(self, split: str = "train") -> None:
        self.parts = [SyntheticWorkload(), *(RecordedWorkload(b, split) for b in RECORDED_BANKS)]

    def sample_tasks(self, rng: np.random.Generator, count: int) -> list[TaskDraw]:
        part = rng.integers(len(self.parts), size=count)
        draws: list[TaskDraw | None] = [None] * count
        for p, workload in enumerate(self.parts):
            where = np.flatnonzero(part == p)
            for k, draw in zip(where.tolist(), workload.sample_tasks(rng, where.size)):
                draws[k] = draw
        return draws
