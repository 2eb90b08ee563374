"""Builder of the ``vision`` bank: image classifiers trained with torch on scikit-learn's 8x8 digits.

The data is ``sklearn.datasets.load_digits()`` (1797 images, shipped with scikit-learn, no download),
pixels scaled to [0, 1] and split once by a fixed seeded permutation into 1437 training and 360
held-out images; only the training part is used. Models: multinomial logistic regression, ReLU MLPs
and a small two-convolution CNN. The grid crosses every optimiser (SGD, SGD with momentum 0.9,
Adam) with four learning-rate levels (slow, medium, fast, aggressive) and, per model family, a list
of settings that vary one axis at a time around a base (batch size, width, depth, weight decay,
label noise, seed). A run records the mean minibatch cross-entropy over each interval of ``k``
optimiser steps, so the curves keep the real minibatch noise.
"""

from __future__ import annotations

import functools

import numpy as np
import torch
from torch import nn

from mara_env.torch_threads import torch_threads

LOSS = (
    "mean cross-entropy training loss (nats) over the minibatches of each interval of k optimiser steps, "
    "on the (possibly label-noised) training labels"
)

N_TRAIN = 1437  # the standard 1437/360 split of the 1797 digits
SPLIT_SEED = 0
OPTIMISERS = ("sgd", "momentum", "adam")
# learning rates per family and optimiser: slow (plateaus), medium, fast, aggressive (noise, spikes)
LEARNING_RATES = {
    "logistic": {"sgd": (0.01, 0.1, 1.0, 4.0), "momentum": (3e-4, 0.003, 0.03, 0.3), "adam": (3e-4, 3e-3, 0.03, 0.2)},
    "mlp": {"sgd": (0.003, 0.03, 0.3, 1.0), "momentum": (0.001, 0.01, 0.05, 0.2), "adam": (1e-4, 1e-3, 0.01, 0.05)},
    "cnn": {"sgd": (0.003, 0.03, 0.2, 0.6), "momentum": (0.001, 0.01, 0.05, 0.15), "adam": (1e-4, 1e-3, 0.01, 0.05)},
}
_BASE = {"bs": 32, "wd": 0.0, "noise": 0.0, "seed": 0}
# settings crossed with optimiser x learning rate: a base, then one axis changed at a time
SETTINGS = {
    "logistic": [
        {},
        {"seed": 1},
        {"bs": 8},
        {"bs": 128},
        {"wd": 1e-3},
        {"wd": 1e-2},
        {"noise": 0.2},
        {"noise": 0.5},
    ],
    "mlp": [
        {"width": 64, "depth": 1},
        {"width": 64, "depth": 1, "seed": 1},
        {"width": 64, "depth": 1, "seed": 2},
        {"width": 16, "depth": 1},
        {"width": 256, "depth": 1},
        {"width": 64, "depth": 3},
        {"width": 64, "depth": 1, "bs": 8},
        {"width": 64, "depth": 1, "bs": 128},
        {"width": 64, "depth": 1, "wd": 1e-3},
        {"width": 64, "depth": 1, "noise": 0.2},
        {"width": 64, "depth": 1, "noise": 0.5},
        {"width": 256, "depth": 2, "noise": 0.2, "seed": 1},
    ],
    "cnn": [
        {"width": 16},
        {"width": 16, "seed": 1},
        {"width": 8},
        {"width": 32},
        {"width": 16, "bs": 128},
        {"width": 16, "wd": 1e-3},
        {"width": 16, "noise": 0.2},
        {"width": 16, "noise": 0.5},
    ],
}
POINTS = {"full": 150, "tiny": 12}
INTERVAL = {"full": 10, "tiny": 2}  # optimiser steps per recorded point


def _key(config: dict) -> str:
    parts = [f"vision/{config['family']}/{config['optimizer']}/lr={config['lr']:g}/bs={config['bs']}"]
    if "width" in config:
        parts.append(f"w={config['width']}")
    if "depth" in config:
        parts.append(f"d={config['depth']}")
    parts.append(f"wd={config['wd']:g}/noise={config['noise']:g}/seed={config['seed']}")
    return "/".join(parts)


def _config(family: str, optimizer: str, lr: float, setting: dict, size: str) -> dict:
    config = {"family": family, "optimizer": optimizer, "lr": lr, **_BASE, **setting}
    config.update(points=POINTS[size], interval=INTERVAL[size])
    config["key"] = _key(config)
    return config


def grid(size: str) -> list[dict]:
    """The run configurations: ``"full"`` (336 runs) or ``"tiny"`` (3 short runs, one per family)."""
    if size not in POINTS:
        raise ValueError(f"size must be 'full' or 'tiny', got {size!r}")
    if size == "tiny":
        picks = [("logistic", "sgd", {}), ("mlp", "adam", SETTINGS["mlp"][0]), ("cnn", "momentum", {"width": 8})]
        return [_config(f, o, LEARNING_RATES[f][o][2], s, size) for f, o, s in picks]
    configs = [
        _config(family, optimizer, lr, setting, size)
        for family, settings in SETTINGS.items()
        for setting in settings
        for optimizer in OPTIMISERS
        for lr in LEARNING_RATES[family][optimizer]
    ]
    if len({c["key"] for c in configs}) != len(configs):
        raise RuntimeError("duplicate keys in the vision grid")
    return configs


@functools.lru_cache(maxsize=1)
def _digits() -> tuple[np.ndarray, np.ndarray]:
    """The fixed training part of the digits: images in [0, 1] (n, 64) float32 and labels (n,)."""
    from sklearn.datasets import load_digits

    data = load_digits()
    order = np.random.default_rng(SPLIT_SEED).permutation(len(data.target))[:N_TRAIN]
    return (data.data[order] / 16.0).astype(np.float32), data.target[order].astype(np.int64)


def _noisy_labels(labels: np.ndarray, fraction: float, seed: int) -> np.ndarray:
    """Replace a seeded ``fraction`` of the labels with uniformly random classes."""
    rng = np.random.default_rng([seed, 12345])
    labels = labels.copy()
    picked = rng.choice(labels.size, size=int(round(fraction * labels.size)), replace=False)
    labels[picked] = rng.integers(0, 10, size=picked.size)
    return labels


def _model(config: dict) -> nn.Module:
    """The classifier of ``config``: logits (n, 10) from flat (n, 64) images."""
    family = config["family"]
    if family == "logistic":
        return nn.Linear(64, 10)
    if family == "mlp":
        widths = [64] + [config["width"]] * config["depth"]
        layers: list[nn.Module] = []
        for fan_in, fan_out in zip(widths[:-1], widths[1:]):
            layers += [nn.Linear(fan_in, fan_out), nn.ReLU()]
        return nn.Sequential(*layers, nn.Linear(widths[-1], 10))
    if family == "cnn":
        c = config["width"]
        return nn.Sequential(
            nn.Unflatten(1, (1, 8, 8)),
            nn.Conv2d(1, c, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(c, 2 * c, 3, padding=1),
            nn.ReLU(),
            nn.Flatten(),
            nn.Linear(2 * c * 16, 10),
        )
    raise ValueError(f"unknown vision family {family!r}")


def _optimizer(config: dict, params) -> torch.optim.Optimizer:
    name, lr, wd = config["optimizer"], config["lr"], config["wd"]
    if name == "sgd":
        return torch.optim.SGD(params, lr=lr, weight_decay=wd)
    if name == "momentum":
        return torch.optim.SGD(params, lr=lr, momentum=0.9, weight_decay=wd)
    if name == "adam":
        return torch.optim.Adam(params, lr=lr, weight_decay=wd)
    raise ValueError(f"unknown optimizer {name!r}")


def _batches(n: int, batch_size: int, generator: torch.Generator):
    """Endless minibatch index tensors: a fresh shuffle every epoch, the last short batch dropped."""
    while True:
        order = torch.randperm(n, generator=generator)
        for start in range(0, n - batch_size + 1, batch_size):
            yield order[start : start + batch_size]


def _train(config: dict) -> np.ndarray:
    """Train once; the mean minibatch loss of each interval of ``config['interval']`` steps."""
    images, labels = _digits()
    x = torch.from_numpy(images)
    y = torch.from_numpy(_noisy_labels(labels, config["noise"], config["seed"]))
    torch.manual_seed(config["seed"])
    model = _model(config)
    optimizer = _optimizer(config, model.parameters())
    batches = _batches(len(y), config["bs"], torch.Generator().manual_seed(config["seed"]))
    loss_fn = nn.CrossEntropyLoss()
    losses = np.empty(config["points"])
    for point in range(config["points"]):
        total = torch.zeros(())
        for _ in range(config["interval"]):
            idx = next(batches)
            loss = loss_fn(model(x[idx]), y[idx])
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            total += loss.detach()
        losses[point] = total.item() / config["interval"]
    return losses


def run(config: dict) -> dict:
    """Train the classifier of ``config`` once (deterministic) and return its loss curve."""
    with torch_threads(1), torch.random.fork_rng(devices=[]):
        losses = _train(config)
    if not np.all(np.isfinite(losses)):
        raise FloatingPointError(f"vision run {config['key']} diverged (non-finite loss)")
    steps = config["interval"] * np.arange(1, config["points"] + 1, dtype=float)
    return {"steps": steps, "losses": np.maximum(losses, 1e-6), "x_unit": "optimizer_step"}
