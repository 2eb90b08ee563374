"""The ``shapes`` bank: small CNNs classifying procedurally generated 16x16 images, scored by error rate.

Eight classes drawn with numpy (filled disc, ring, square, triangle, horizontal stripes, vertical
stripes, diagonal stripes, cross), each at a random position, size, contrast and stripe period,
plus Gaussian pixel noise; 2,000 training and 500 validation images from fixed seeds. Runs vary
the schedule (step decays x0.1 at fixed shares of the run, cosine, warm-up, constant...), optimiser,
learning rate, batch size, width, noise level and label noise. The recorded metric is the top-1
error rate on the validation images after each interval, as a scheduler would see an accuracy
curve.
"""

from __future__ import annotations

import functools

import numpy as np

from mara_env.workloads.builders._common import (
    SCHEDULES,
    bank_grid,
    batches,
    finish,
    make_optimizer,
    run_single_threaded,
    train_and_record,
)

LOSS = (
    "shapes: 0.01 + top-1 error rate of the CNN on 500 held-out generated images (8 classes, chance "
    "error 0.875), evaluated after every interval of optimiser steps"
)
SIDE, CLASSES = 16, 8
N_TRAIN, N_VAL = 2000, 500
FLOOR, CAP = 0.01, 1.01
AXES = {
    "schedule": SCHEDULES,
    "optimizer": ("sgd", "momentum", "nesterov", "adam", "adamw", "rmsprop"),
    "lr_level": (0, 1, 2, 3),
    "bs": (16, 32, 64),
    "width": (4, 6, 8, 12),
    "pixel_noise": (0.1, 0.3, 0.6),
    "label_noise": (0.0, 0.0, 0.1, 0.3),
    "seed": (0, 1, 2),
}
#: base learning rate per optimiser and level (slow .. aggressive)
LEARNING_RATES = {
    "sgd": (0.01, 0.03, 0.1, 0.3),
    "momentum": (0.003, 0.01, 0.03, 0.1),
    "nesterov": (0.003, 0.01, 0.03, 0.1),
    "adam": (3e-4, 1e-3, 3e-3, 1e-2),
    "adamw": (3e-4, 1e-3, 3e-3, 1e-2),
    "rmsprop": (1e-4, 3e-4, 1e-3, 3e-3),
}
PER_SIZE = {"full": {"points": 40, "interval": 10}, "tiny": {"points": 5, "interval": 2}}


def grid(size: str) -> list[dict]:
    """``full``: 175 sampled runs; ``tiny``: 2 short ones (CI)."""
    return bank_grid(size, "shapes/cnn", AXES, 101, PER_SIZE, family="cnn")


def _draw(kind: int, rng: np.random.Generator) -> np.ndarray:
    yy, xx = np.mgrid[0:SIDE, 0:SIDE].astype(np.float32)
    cy, cx = rng.uniform(4, SIDE - 4, size=2)
    r = rng.uniform(2.5, 5.5)
    period = rng.uniform(2.5, 5.0)
    if kind == 0:
        mask = (yy - cy) ** 2 + (xx - cx) ** 2 <= r * r
    elif kind == 1:
        d = np.sqrt((yy - cy) ** 2 + (xx - cx) ** 2)
        mask = (d <= r) & (d >= r - 1.5)
    elif kind == 2:
        mask = (np.abs(yy - cy) <= r * 0.8) & (np.abs(xx - cx) <= r * 0.8)
    elif kind == 3:
        mask = (yy >= cy - r) & (yy <= cy + r) & (np.abs(xx - cx) <= (yy - (cy - r)) / 2)
    elif kind == 4:
        mask = np.sin(2 * np.pi * yy / period + rng.uniform(0, 6.3)) > 0
    elif kind == 5:
        mask = np.sin(2 * np.pi * xx / period + rng.uniform(0, 6.3)) > 0
    elif kind == 6:
        mask = np.sin(2 * np.pi * (xx + yy) / (1.4 * period) + rng.uniform(0, 6.3)) > 0
    else:
        mask = ((np.abs(yy - cy) <= 1.0) | (np.abs(xx - cx) <= 1.0)) & (np.abs(yy - cy) <= r) & (np.abs(xx - cx) <= r)
    return mask.astype(np.float32) * rng.uniform(0.5, 1.0)


@functools.lru_cache(maxsize=1)
def images(seed: int = 7) -> tuple[np.ndarray, np.ndarray]:
    """Noise-free images ``(N_TRAIN + N_VAL, 1, 16, 16)`` and labels, from a fixed seed."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(CLASSES, size=N_TRAIN + N_VAL)
    x = np.stack([_draw(int(k), rng) for k in labels])[:, None]
    return x, labels.astype(np.int64)


def _noisy(config: dict) -> tuple[np.ndarray, np.ndarray]:
    x, y = images()
    rng = np.random.default_rng([config["seed"], 11])
    x = (x + rng.normal(0.0, config["pixel_noise"], x.shape)).astype(np.float32)
    y = y.copy()
    flip = rng.random(N_TRAIN) < config["label_noise"]
    y[:N_TRAIN][flip] = rng.integers(CLASSES, size=int(flip.sum()))
    return x, y


def _model(width: int):
    from torch import nn

    c = width
    return nn.Sequential(
        nn.Conv2d(1, c, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(c, 2 * c, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(2 * c * 16, CLASSES),
    )


def _train(config: dict) -> np.ndarray:
    import torch
    from torch import nn

    x, y = (torch.from_numpy(a) for a in _noisy(config))
    x_tr, y_tr, x_va, y_va = x[:N_TRAIN], y[:N_TRAIN], x[N_TRAIN:], y[N_TRAIN:]
    model = _model(config["width"])
    lr = LEARNING_RATES[config["optimizer"]][config["lr_level"]]
    optimizer = make_optimizer(config["optimizer"], model.parameters(), lr)
    stream = batches(N_TRAIN, config["bs"], torch.Generator().manual_seed(config["seed"]))
    loss_fn = nn.CrossEntropyLoss()

    def step_loss():
        idx = next(stream)
        return loss_fn(model(x_tr[idx]), y_tr[idx])

    def evaluate() -> float:
        return float((model(x_va).argmax(dim=1) != y_va).float().mean())

    return train_and_record(model, optimizer, step_loss, evaluate, config)


def run(config: dict) -> dict:
    """Train the CNN of ``config`` once (deterministic) and return its validation error curve."""
    return finish(config, FLOOR + run_single_threaded(_train, config), FLOOR, CAP, "optimizer_step")
