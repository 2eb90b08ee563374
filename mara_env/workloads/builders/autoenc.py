"""The ``autoenc`` bank: autoencoders reconstructing images, scored by held-out reconstruction error.

Inputs are scikit-learn's 8x8 digits (64 pixels) or the ``shapes`` bank's generated 16x16 images
(256 pixels, downsampled to 8x8 for the MLP ones). Models: MLP autoencoders with a bottleneck of
2 to 32 units (ReLU or tanh) and, for the images, optional input noise (denoising). Runs vary the
schedule, optimiser, learning rate, batch size, width and bottleneck. The recorded metric is the
held-out mean squared reconstruction error divided by the pixels' variance (1.0 = predicting the mean
image), after every interval of optimiser steps.
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
    "autoenc: held-out mean squared reconstruction error / pixel variance (1.0 = the mean image) of an "
    "MLP autoencoder on 8x8 digits or 8x8 generated shapes, after every interval of optimiser steps"
)
FLOOR, CAP = 1e-3, 50.0
AXES = {
    "data": ("digits", "shapes"),
    "schedule": SCHEDULES,
    "optimizer": ("sgd", "momentum", "adam", "adamw", "rmsprop"),
    "lr_level": (0, 1, 2, 3),
    "bs": (16, 64, 256),
    "width": (32, 128),
    "bottleneck": (2, 4, 8, 16, 32),
    "activation": ("relu", "tanh"),
    "denoise": (0.0, 0.0, 0.2),
    "seed": (0, 1, 2),
}
LEARNING_RATES = {
    "sgd": (0.01, 0.03, 0.1, 0.3),
    "momentum": (0.001, 0.003, 0.01, 0.05),
    "adam": (1e-4, 3e-4, 1e-3, 1e-2),
    "adamw": (1e-4, 3e-4, 1e-3, 1e-2),
    "rmsprop": (3e-5, 1e-4, 3e-4, 3e-3),
}
PER_SIZE = {"full": {"points": 50, "interval": 10}, "tiny": {"points": 4, "interval": 2}}


def grid(size: str) -> list[dict]:
    """``full``: 175 sampled runs; ``tiny``: 2 short ones (CI)."""
    return bank_grid(size, "autoenc/mlp", AXES, 707, PER_SIZE, family=None)


@functools.lru_cache(maxsize=2)
def pixels(name: str) -> tuple[np.ndarray, np.ndarray]:
    """``(train, val)`` float32 images ``(n, 64)`` in [0, 1], split 75/25 by a fixed seed."""
    if name == "digits":
        from sklearn.datasets import load_digits

        x = load_digits().data / 16.0
    elif name == "shapes":
        from mara_env.workloads.builders.shapes import images

        big = images()[0][:, 0]
        x = big.reshape(len(big), 8, 2, 8, 2).mean(axis=(2, 4)).reshape(len(big), 64)
    else:
        raise ValueError(f"data must be 'digits' or 'shapes', got {name!r}")
    order = np.random.default_rng(0).permutation(len(x))
    cut = int(0.75 * len(x))
    x = x.astype(np.float32)
    return x[order[:cut]], x[order[cut:]]


def _model(config: dict):
    from torch import nn

    act = nn.ReLU if config["activation"] == "relu" else nn.Tanh
    w, b = config["width"], config["bottleneck"]
    return nn.Sequential(nn.Linear(64, w), act(), nn.Linear(w, b), act(), nn.Linear(b, w), act(), nn.Linear(w, 64))


def _train(config: dict) -> np.ndarray:
    import torch
    from torch.nn.functional import mse_loss

    train, val = (torch.from_numpy(a) for a in pixels(config["data"]))
    variance = float(val.var())
    model = _model(config)
    lr = LEARNING_RATES[config["optimizer"]][config["lr_level"]]
    optimizer = make_optimizer(config["optimizer"], model.parameters(), lr)
    stream = batches(len(train), config["bs"], torch.Generator().manual_seed(config["seed"]))
    noise_gen = torch.Generator().manual_seed(config["seed"] + 1000)

    def step_loss():
        x = train[next(stream)]
        noisy = x + config["denoise"] * torch.randn(x.shape, generator=noise_gen)
        return mse_loss(model(noisy), x)

    return train_and_record(model, optimizer, step_loss, lambda: float(mse_loss(model(val), val)) / variance, config)


def run(config: dict) -> dict:
    """Train the autoencoder of ``config`` once (deterministic) and return its held-out error curve."""
    return finish(config, run_single_threaded(_train, config), FLOOR, CAP, "optimizer_step")
