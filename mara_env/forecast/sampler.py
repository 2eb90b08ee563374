"""Training examples of the flow forecaster, drawn in whole batches with numpy (no per-example loop).

An example is a curve, an observation stride (1 to ``MAX_STRIDE`` points, at most an eighth of the
curve), a prefix end (log-uniform between two strides and 80% of the curve), the prefix's last
``PREFIX`` observed points encoded exactly as :func:`mara_env.forecast.flow.encode_prefix` does at
prediction time, and the future best-loss trajectory on the flow's grid (points past the end of the
recording masked). Curves are padded into one array; augmented copies (see
:mod:`mara_env.forecast.augment`) are made once, up front, so that a batch costs a few array ops.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mara_env.forecast.augment import RANGES, augment
from mara_env.forecast.flow import CONDITION_SIZE, PREFIX, future_grid

MAX_STRIDE = 16
MIN_POINTS = 8


class TrajectorySampler:
    """Draws ``(condition, future trajectory, mask)`` batches from a list of loss curves.

    Parameters
    ----------
    curves:
        Positive loss curves (repeat a curve to weight it more); curves under 8 points are dropped.
    rng:
        The generator of every draw.
    strength:
        Augmentation strength; with ``strength > 0`` each curve also gets ``copies`` augmented
        versions, and a draw picks the original or one of them uniformly.
    copies:
        Augmented versions per curve.
    ranges:
        Ranges of the power and floor transforms (:data:`mara_env.forecast.augment.RANGES`).
    """

    def __init__(
        self,
        curves: Sequence[np.ndarray],
        rng: np.random.Generator,
        strength: float = 0.0,
        copies: int = 3,
        ranges: dict = RANGES,
    ) -> None:
        kept = [np.asarray(c, dtype=np.float64) for c in curves if len(c) >= MIN_POINTS]
        if not kept:
            raise ValueError(f"curves must hold at least one curve of >= {MIN_POINTS} points")
        if strength > 0:
            kept = kept + [augment(c, rng, strength, ranges) for _ in range(copies) for c in kept]
        self.lengths = np.array([c.size for c in kept])
        width = int(self.lengths.max())
        self.log_raw = np.zeros((len(kept), width))
        self.log_best = np.zeros((len(kept), width))
        for i, c in enumerate(kept):
            self.log_raw[i, : c.size] = np.log(c)
            self.log_best[i, : c.size] = np.log(np.minimum.accumulate(c))
        self.rng = rng
        self.r = future_grid()

    def __len__(self) -> int:
        return self.lengths.size

    def draw(self, size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Random ``(curve, stride, end)`` of ``size`` examples."""
        rng = self.rng
        c = rng.integers(len(self), size=size)
        n = self.lengths[c]
        top = np.minimum(MAX_STRIDE, np.maximum(n // 8, 1))
        stride = 1 + np.floor(rng.random(size) * top).astype(np.int64)
        low = 2 * stride
        high = np.maximum((0.8 * n).astype(np.int64), low + 1)
        end = np.exp(rng.uniform(np.log(low), np.log(high))).astype(np.int64)
        return c, stride, end

    def examples(self, c: np.ndarray, stride: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, ...]:
        """Encoded conditions ``(B, CONDITION_SIZE)``, targets ``(B, GRID)`` and masks for given draws."""
        size = c.size
        index = end[:, None] - stride[:, None] * np.arange(PREFIX - 1, -1, -1)[None, :]  # ascending
        valid = index > 0
        safe = np.where(valid, index, 1)
        log_loss = self.log_raw[c[:, None], safe]
        m = valid.sum(axis=1)
        last3 = np.arange(PREFIX) >= PREFIX - np.minimum(m, 3)[:, None]
        log_ref = (log_loss * last3).sum(axis=1) / last3.sum(axis=1)
        cond = np.zeros((size, CONDITION_SIZE), dtype=np.float32)
        cond[:, :PREFIX] = np.where(valid, np.log(safe / end[:, None]), 0.0)
        cond[:, PREFIX : 2 * PREFIX] = np.where(valid, log_loss - log_ref[:, None], 0.0)
        cond[:, 2 * PREFIX : 3 * PREFIX] = valid
        cond[:, 3 * PREFIX] = self.log_raw[c, 0] - log_ref
        cond[:, 3 * PREFIX + 1] = np.log(m)
        n = self.lengths[c]
        future = np.floor(end[:, None] * (1.0 + self.r[None, :])).astype(np.int64)
        mask = future <= (n - 1)[:, None]
        z = self.log_best[c[:, None], np.minimum(future, (n - 1)[:, None])] - log_ref[:, None]
        return cond, z.astype(np.float32), mask.astype(np.float32)

    def batch(self, size: int):
        """A training batch as torch tensors ``(condition, trajectory, mask)``."""
        import torch

        return tuple(torch.as_tensor(a) for a in self.examples(*self.draw(size)))
