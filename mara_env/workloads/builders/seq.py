"""The ``seq`` bank: small transformer sequence taggers scored by a WER-like token error rate.

Each run learns one string transduction over digit sequences of length 8-12 (vocabulary 10): reverse
the sequence, sort it, shift every digit by the one before it (running sum mod 10), or copy it with
the digits of even position doubled mod 10. The model is a bidirectional (non-causal) transformer encoder that
emits one output symbol per input symbol (same length, so the error is the substitution-only word error rate).
Runs vary the task, schedule, optimiser, learning rate, batch size and width. The recorded metric is
the token error rate on 200 fixed held-out sequences, plus 0.01 so that it stays positive.
"""

from __future__ import annotations

import numpy as np

from mara_env.workloads.builders._common import (
    SCHEDULES,
    bank_grid,
    finish,
    make_optimizer,
    run_single_threaded,
    train_and_record,
)

LOSS = (
    "seq: 0.01 + token error rate (substitution-only word error rate: wrong output symbols / output "
    "symbols) of a transformer tagger on 200 fixed held-out digit sequences (chance error 0.9)"
)
FLOOR, CAP = 0.01, 1.01
TASKS = ("reverse", "sort", "cumsum", "double_even")
N_VAL, MIN_LEN, MAX_LEN = 200, 8, 12
AXES = {
    "task": TASKS,
    "schedule": SCHEDULES,
    "optimizer": ("sgd", "momentum", "adam", "adamw", "rmsprop"),
    "lr_level": (0, 1, 2, 3),
    "bs": (16, 32, 64),
    "d_model": (32, 48),
    "layers": (1, 1, 2),
    "seed": (0, 1, 2),
}
LEARNING_RATES = {
    "sgd": (0.1, 0.3, 1.0, 3.0),
    "momentum": (0.01, 0.03, 0.1, 0.3),
    "adam": (1e-3, 3e-3, 1e-2, 3e-2),
    "adamw": (1e-3, 3e-3, 1e-2, 3e-2),
    "rmsprop": (3e-4, 1e-3, 3e-3, 1e-2),
}
PER_SIZE = {"full": {"points": 25, "interval": 8}, "tiny": {"points": 4, "interval": 2}}


def grid(size: str) -> list[dict]:
    """``full``: 175 sampled runs; ``tiny``: 2 short ones (CI)."""
    return bank_grid(size, "seq/transformer", AXES, 404, PER_SIZE, family="transformer")


def transduce(task: str, x: np.ndarray) -> np.ndarray:
    """The target of each row of ``x`` (n, length) under ``task``."""
    if task == "reverse":
        return x[:, ::-1].copy()
    if task == "sort":
        return np.sort(x, axis=1)
    if task == "cumsum":
        return np.cumsum(x, axis=1) % 10
    if task == "double_even":
        y = x.copy()
        y[:, ::2] = (2 * y[:, ::2]) % 10
        return y
    raise ValueError(f"task must be one of {TASKS}, got {task!r}")


def _sequences(rng: np.random.Generator, n: int, task: str):
    import torch

    length = int(rng.integers(MIN_LEN, MAX_LEN + 1))
    x = rng.integers(0, 10, size=(n, length))
    return torch.from_numpy(x), torch.from_numpy(transduce(task, x))


def _model(config: dict):
    import torch
    from torch import nn

    d = config["d_model"]

    class Tagger(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed = nn.Embedding(10, d)
            self.position = nn.Parameter(0.1 * torch.randn(1, MAX_LEN, d))
            layer = nn.TransformerEncoderLayer(d, 4, 2 * d, dropout=0.0, batch_first=True, norm_first=True)
            self.blocks = nn.TransformerEncoder(layer, config["layers"], enable_nested_tensor=False)
            self.out = nn.Linear(d, 10)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.out(self.blocks(self.embed(x) + self.position[:, : x.shape[1]]))

    return Tagger()


def _train(config: dict) -> np.ndarray:
    from torch.nn.functional import cross_entropy

    rng = np.random.default_rng([config["seed"], 9])
    val = [_sequences(np.random.default_rng([77, k]), N_VAL // 4, config["task"]) for k in range(4)]
    model = _model(config)
    lr = LEARNING_RATES[config["optimizer"]][config["lr_level"]]
    optimizer = make_optimizer(config["optimizer"], model.parameters(), lr)

    def step_loss():
        x, y = _sequences(rng, config["bs"], config["task"])
        return cross_entropy(model(x).reshape(-1, 10), y.reshape(-1))

    def evaluate() -> float:
        wrong = sum(float((model(x).argmax(dim=2) != y).sum()) for x, y in val)
        return wrong / sum(y.numel() for _, y in val)

    return train_and_record(model, optimizer, step_loss, evaluate, config)


def run(config: dict) -> dict:
    """Train the tagger of ``config`` once (deterministic) and return its validation token-error curve."""
    return finish(config, FLOOR + run_single_threaded(_train, config), FLOOR, CAP, "optimizer_step")
