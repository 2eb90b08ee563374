"""Training-time augmentation of loss curves for the flow forecaster.

Real jobs differ from our banks in ways that have simple shapes: learning-rate step decays (a quick
drop, then a new plateau), long plateaus before progress resumes, metrics other than a loss (a
monotone transform of it, often with a floor) and a different pace (the same curve on a warped
time axis). Each transform below maps a positive curve to a positive curve of the same length; the
sampler applies each with its own probability, so that most examples stay close to the recordings.
"""

from __future__ import annotations

import numpy as np

#: probability of each transform per training example
PROBABILITIES = {"power": 0.3, "floor": 0.3, "warp": 0.3, "drop": 0.25, "plateau": 0.15}
#: range of the exponent ``p`` of :func:`power` (log-uniform) and of the floor shift of :func:`floor`
#: in units of the curve's minimum (uniform); :data:`WIDE` is the wider setting (see docs/forecasters.md)
RANGES = {"power": (0.5, 2.0), "floor": (-0.9, 2.0)}
WIDE = {"power": (0.2, 2.0), "floor": (-0.9, 6.0)}


def power(curve: np.ndarray, rng: np.random.Generator, ranges: dict = RANGES) -> np.ndarray:
    """``L ** p``: a monotone metric transform (sharper or flatter in log space)."""
    low, high = ranges["power"]
    return curve ** np.exp(rng.uniform(np.log(low), np.log(high)))


def floor(curve: np.ndarray, rng: np.random.Generator, ranges: dict = RANGES) -> np.ndarray:
    """Move the curve's floor: subtract up to 90% of its minimum (approaching 0, like error rates)
    or add a multiple of it (an irreducible level it flattens above, like bits per character)."""
    low = float(curve.min())
    shift = rng.uniform(*ranges["floor"]) * low
    return np.maximum(curve + shift, 1e-3 * low)


def warp(curve: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The same curve on a warped time axis ``t' = t ** q`` (a different pace of progress)."""
    n = curve.size
    q = np.exp(rng.uniform(np.log(0.6), np.log(1.6)))
    where = (n - 1) * (np.arange(n) / (n - 1)) ** q
    return np.interp(where, np.arange(n), curve)


def drop(curve: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A learning-rate step decay at a random point: the rest of the curve falls by a factor
    ``1 - a`` within a few points (``a`` up to 60%), then goes on from there."""
    n = curve.size
    at = int(rng.integers(n // 5, max(n - 2, n // 5 + 1)))
    depth = rng.uniform(0.1, 0.6)
    tau = max(1.0, rng.uniform(0.005, 0.05) * n)
    t = np.arange(n) - at
    factor = np.where(t < 0, 1.0, 1.0 - depth * (1.0 - np.exp(-np.maximum(t, 0) / tau)))
    return curve * factor


def plateau(curve: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Progress stalls for a while: a flat stretch (with the curve's own noise level) is inserted at a
    random point and the curve continues after it; the length is kept by cutting the end."""
    n = curve.size
    at = int(rng.integers(1, max(n // 2, 2)))
    span = int(rng.integers(n // 10 + 1, n // 3 + 2))
    noise = np.std(np.diff(np.log(curve))) if n > 2 else 0.0
    flat = curve[at] * np.exp(rng.normal(0.0, 0.5 * noise, span))
    return np.concatenate([curve[:at], flat, curve[at:]])[:n]


TRANSFORMS = {"power": power, "floor": floor, "warp": warp, "drop": drop, "plateau": plateau}


def augment(curve: np.ndarray, rng: np.random.Generator, strength: float = 1.0, ranges: dict = RANGES) -> np.ndarray:
    """``curve`` after each transform, applied with probability ``strength x`` its entry in
    :data:`PROBABILITIES` (in a random order); ``strength = 0`` returns the curve unchanged."""
    if strength <= 0:
        return curve
    out = curve
    for name in rng.permutation(list(TRANSFORMS)):
        if rng.random() < strength * PROBABILITIES[name]:
            out = TRANSFORMS[name](out, rng, ranges) if name in ranges else TRANSFORMS[name](out, rng)
    return np.maximum(out, 1e-12)
