"""The ``tabular`` bank: MLPs on scikit-learn's bundled tabular sets, scored on held-out rows.

Data sets (see :mod:`mara_env.workloads.builders._tabular_data`): iris, wine, breast_cancer,
digits as 64 features, diabetes and friedman1 regression, hastie_10_2 and noisy moons. Runs vary
the schedule, optimiser, learning rate, batch size, width, depth and weight decay. The recorded
metric is, for classification, the held-out cross-entropy (nats), and for regression the held-out
mean squared error of the standardised target (1.0 = predicting the mean); small sets overfit, so
some curves turn up again, as real validation curves do.
"""

from __future__ import annotations

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
from mara_env.workloads.builders._tabular_data import DATASETS, dataset

LOSS = (
    "tabular: held-out cross-entropy (nats) for classification sets, held-out MSE of the standardised "
    "target for regression sets (diabetes, friedman1), of an MLP, after every interval of optimiser steps"
)
FLOOR, CAP = 1e-3, 50.0
AXES = {
    "data": tuple(DATASETS),
    "schedule": SCHEDULES,
    "optimizer": ("sgd", "momentum", "nesterov", "adam", "adamw", "rmsprop"),
    "lr_level": (0, 1, 2, 3),
    "bs": (8, 32, 128),
    "width": (16, 64, 256),
    "depth": (1, 2, 3),
    "wd": (0.0, 1e-4, 1e-2),
    "seed": (0, 1, 2),
}
LEARNING_RATES = {
    "sgd": (0.003, 0.01, 0.03, 0.1),
    "momentum": (3e-4, 0.001, 0.01, 0.05),
    "nesterov": (3e-4, 0.001, 0.01, 0.05),
    "adam": (1e-4, 3e-4, 1e-3, 1e-2),
    "adamw": (1e-4, 3e-4, 1e-3, 1e-2),
    "rmsprop": (3e-5, 1e-4, 1e-3, 3e-3),
}
PER_SIZE = {"full": {"points": 50, "interval": 10}, "tiny": {"points": 4, "interval": 2}}


def grid(size: str) -> list[dict]:
    """``full``: 175 sampled runs; ``tiny``: 2 short ones (CI)."""
    return bank_grid(size, "tabular/mlp", AXES, 505, PER_SIZE, family=None)


def _model(config: dict, inputs: int, outputs: int):
    from torch import nn

    layers, fan_in = [], inputs
    for _ in range(config["depth"]):
        layers += [nn.Linear(fan_in, config["width"]), nn.ReLU()]
        fan_in = config["width"]
    return nn.Sequential(*layers, nn.Linear(fan_in, outputs))


def _train(config: dict) -> np.ndarray:
    import torch
    from torch.nn.functional import cross_entropy, mse_loss

    classes = DATASETS[config["data"]]
    x_tr, y_tr, x_va, y_va = (torch.from_numpy(a) for a in dataset(config["data"]))
    model = _model(config, x_tr.shape[1], max(classes, 1))
    lr = LEARNING_RATES[config["optimizer"]][config["lr_level"]]
    optimizer = make_optimizer(config["optimizer"], model.parameters(), lr, config["wd"])
    stream = batches(len(y_tr), config["bs"], torch.Generator().manual_seed(config["seed"]))

    def objective(x, y):
        out = model(x)
        return cross_entropy(out, y) if classes else mse_loss(out[:, 0], y)

    def step_loss():
        idx = next(stream)
        return objective(x_tr[idx], y_tr[idx])

    return train_and_record(model, optimizer, step_loss, lambda: float(objective(x_va, y_va)), config)


def run(config: dict) -> dict:
    """Train the MLP of ``config`` once (deterministic) and return its held-out loss curve."""
    return finish(config, run_single_threaded(_train, config), FLOOR, CAP, "optimizer_step")
