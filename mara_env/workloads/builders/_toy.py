"""A toy builder used by the tests of the build driver (no training, instant)."""

from __future__ import annotations

import numpy as np

LOSS = "toy: a noisy power law"


def grid(size: str) -> list[dict]:
    n = 3 if size == "tiny" else 6
    return [{"key": f"toy/seed={s}", "family": "toy", "seed": s} for s in range(n)]


def run(config: dict) -> dict:
    rng = np.random.default_rng(config["seed"])
    steps = np.arange(1, 51, dtype=float)
    losses = 2.0 * steps**-0.5 * np.exp(rng.normal(0.0, 0.01, steps.size))
    return {"steps": steps, "losses": losses, "x_unit": "step"}
