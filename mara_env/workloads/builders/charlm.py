"""The ``charlm`` bank: character-level LSTM language models on Python standard-library source text.

See :mod:`mara_env.workloads.builders._text` for the corpus (16 stdlib files, 96-symbol vocabulary,
the last 10% held out). Runs vary the schedule, optimiser, learning rate, batch size, hidden width,
depth, sequence length and dropout. The recorded metric is the validation cross-entropy in bits per
character on a fixed set of 32 held-out windows of 64 characters, after every interval of steps.
"""

from __future__ import annotations

import math

import numpy as np

from mara_env.workloads.builders import _text
from mara_env.workloads.builders._common import (
    SCHEDULES,
    bank_grid,
    finish,
    make_optimizer,
    run_single_threaded,
    train_and_record,
)

LOSS = (
    "charlm: validation cross-entropy in bits per character (log2 of the per-character perplexity) of "
    "an LSTM language model on 32 fixed held-out windows of 64 characters of Python stdlib source"
)
FLOOR, CAP = 0.05, 8.0
VAL_WINDOWS, VAL_LENGTH = 32, 64
AXES = {
    "schedule": SCHEDULES,
    "optimizer": ("sgd", "momentum", "adam", "adamw", "rmsprop"),
    "lr_level": (0, 1, 2, 3),
    "bs": (8, 16, 32),
    "hidden": (32, 64, 96),
    "layers": (1, 2),
    "seq": (32, 64),
    "dropout": (0.0, 0.2),
    "seed": (0, 1, 2),
}
LEARNING_RATES = {
    "sgd": (0.1, 0.3, 1.0, 3.0),
    "momentum": (0.01, 0.03, 0.1, 0.3),
    "adam": (3e-4, 1e-3, 3e-3, 1e-2),
    "adamw": (3e-4, 1e-3, 3e-3, 1e-2),
    "rmsprop": (3e-4, 1e-3, 3e-3, 1e-2),
}
PER_SIZE = {"full": {"points": 30, "interval": 10}, "tiny": {"points": 4, "interval": 2}}


def grid(size: str) -> list[dict]:
    """``full``: 175 sampled runs; ``tiny``: 2 short ones (CI)."""
    return bank_grid(size, "charlm/lstm", AXES, 202, PER_SIZE, family="lstm", python=_text.PYTHON)


def _model(config: dict):
    import torch
    from torch import nn

    class CharLSTM(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            h = config["hidden"]
            self.embed = nn.Embedding(len(_text.CHARS), min(h, 32))
            inner = config["dropout"] if config["layers"] > 1 else 0.0  # between layers only
            self.lstm = nn.LSTM(min(h, 32), h, config["layers"], batch_first=True, dropout=inner)
            self.drop = nn.Dropout(config["dropout"])
            self.out = nn.Linear(h, len(_text.CHARS))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.out(self.drop(self.lstm(self.embed(x))[0]))

    return CharLSTM()


def _train(config: dict) -> np.ndarray:
    import torch
    from torch.nn.functional import cross_entropy

    train_ids, val_ids = _text.char_ids()
    rng = np.random.default_rng([config["seed"], 3])
    val_x, val_y = _text.windows(val_ids, np.linspace(0, len(val_ids) - VAL_LENGTH - 2, VAL_WINDOWS).astype(int), 64)
    model = _model(config)
    lr = LEARNING_RATES[config["optimizer"]][config["lr_level"]]
    optimizer = make_optimizer(config["optimizer"], model.parameters(), lr)
    vocab = len(_text.CHARS)

    def step_loss():
        starts = rng.integers(0, len(train_ids) - config["seq"] - 1, size=config["bs"])
        x, y = _text.windows(train_ids, starts, config["seq"])
        return cross_entropy(model(x).reshape(-1, vocab), y.reshape(-1))

    def evaluate() -> float:
        nats = cross_entropy(model(val_x).reshape(-1, vocab), val_y.reshape(-1))
        return float(nats) / math.log(2.0)

    torch.manual_seed(config["seed"])
    return train_and_record(model, optimizer, step_loss, evaluate, config)


def run(config: dict) -> dict:
    """Train the LSTM of ``config`` once (deterministic) and return its validation bits-per-char curve."""
    return finish(config, run_single_threaded(_train, config), FLOOR, CAP, "optimizer_step")
