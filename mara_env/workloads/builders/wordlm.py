"""The ``wordlm`` bank: small word-level transformer language models on Python stdlib source tokens.

Tokens are identifiers, numbers and single symbols of the corpus in
:mod:`mara_env.workloads.builders._text`; the most frequent training tokens form the vocabulary
(500 or 1,000 ids, the rest one "unknown" id). The model is a causal transformer (learned positions,
pre-norm layers). Runs vary the schedule (warm-up then cosine is the usual transformer recipe, but
every schedule is in the grid), optimiser, learning rate, batch size, width, depth, context and
vocabulary. The recorded metric is the validation perplexity on 24 fixed held-out windows.
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
    "wordlm: validation perplexity (exp of the mean cross-entropy per token) of a causal transformer on "
    "24 fixed held-out windows of 32 tokens of Python stdlib source (vocabulary 500 or 1,000 ids)"
)
FLOOR, CAP = 1.0, 1e5
VAL_WINDOWS, VAL_LENGTH = 24, 32
AXES = {
    "schedule": SCHEDULES,
    "optimizer": ("adam", "adamw", "adamw", "momentum", "rmsprop"),
    "lr_level": (0, 1, 2, 3),
    "bs": (8, 16),
    "d_model": (32, 64),
    "layers": (1, 2),
    "context": (16, 32),
    "vocab": (500, 1000),
    "seed": (0, 1, 2),
}
LEARNING_RATES = {
    "adam": (3e-4, 1e-3, 3e-3, 1e-2),
    "adamw": (3e-4, 1e-3, 3e-3, 1e-2),
    "momentum": (0.01, 0.03, 0.1, 0.3),
    "rmsprop": (1e-4, 3e-4, 1e-3, 3e-3),
}
PER_SIZE = {"full": {"points": 25, "interval": 8}, "tiny": {"points": 4, "interval": 2}}


def grid(size: str) -> list[dict]:
    """``full``: 175 sampled runs; ``tiny``: 2 short ones (CI)."""
    return bank_grid(size, "wordlm/transformer", AXES, 303, PER_SIZE, family="transformer", python=_text.PYTHON)


def _model(config: dict):
    import torch
    from torch import nn

    d, vocab, context = config["d_model"], config["vocab"], config["context"]

    class TinyTransformer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed = nn.Embedding(vocab, d)
            self.position = nn.Parameter(torch.zeros(1, max(context, VAL_LENGTH), d))
            layer = nn.TransformerEncoderLayer(d, 4, 2 * d, dropout=0.0, batch_first=True, norm_first=True)
            self.blocks = nn.TransformerEncoder(layer, config["layers"], enable_nested_tensor=False)
            self.norm = nn.LayerNorm(d)
            self.out = nn.Linear(d, vocab)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            n = x.shape[1]
            mask = torch.triu(torch.full((n, n), float("-inf")), diagonal=1)
            h = self.blocks(self.embed(x) + self.position[:, :n], mask=mask, is_causal=True)
            return self.out(self.norm(h))

    return TinyTransformer()


def _train(config: dict) -> np.ndarray:
    from torch.nn.functional import cross_entropy

    train_ids, val_ids = _text.word_ids(config["vocab"])
    rng = np.random.default_rng([config["seed"], 5])
    val_starts = np.linspace(0, len(val_ids) - VAL_LENGTH - 2, VAL_WINDOWS).astype(int)
    val_x, val_y = _text.windows(val_ids, val_starts, VAL_LENGTH)
    model = _model(config)
    lr = LEARNING_RATES[config["optimizer"]][config["lr_level"]]
    optimizer = make_optimizer(config["optimizer"], model.parameters(), lr)
    vocab = config["vocab"]

    def step_loss():
        starts = rng.integers(0, len(train_ids) - config["context"] - 1, size=config["bs"])
        x, y = _text.windows(train_ids, starts, config["context"])
        return cross_entropy(model(x).reshape(-1, vocab), y.reshape(-1))

    def evaluate() -> float:
        nats = float(cross_entropy(model(val_x).reshape(-1, vocab), val_y.reshape(-1)))
        return math.exp(min(nats, math.log(CAP)))

    return train_and_record(model, optimizer, step_loss, evaluate, config)


def run(config: dict) -> dict:
    """Train the transformer of ``config`` once (deterministic) and return its validation perplexity curve."""
    return finish(config, run_single_threaded(_train, config), FLOOR, CAP, "optimizer_step")
