"""Shared parts of the torch builders: sampled grids, learning-rate schedules, optimisers, the run loop.

A family's grid is a seeded random search over its axes (as real hyper-parameter sweeps are), so a
few hundred runs cover many combinations of schedule, optimiser, learning rate, batch size and width.
Every run trains for ``points`` intervals of ``interval`` optimiser steps and evaluates a validation
metric after each interval (the recorded curve). The schedule is a function of the step, so step
decays fall at fixed shares of the run, like epoch milestones in real jobs.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator

import numpy as np

SCHEDULES = ("constant", "step", "step3", "cosine", "warmup_cosine", "exponential", "linear")
#: Share of the run at which ``step`` (x0.1 each) and ``step3`` (x0.1 each) decays fall.
STEP_MILESTONES = {"step": (0.5, 0.75), "step3": (0.3, 0.6, 0.85)}
WARMUP_SHARE = 0.05
SIZES = ("full", "tiny")


def lr_factor(schedule: str, progress: float) -> float:
    """Multiplier of the base learning rate at ``progress`` in ``[0, 1)`` of the run."""
    if schedule == "constant":
        return 1.0
    if schedule in STEP_MILESTONES:
        return 0.1 ** sum(progress >= m for m in STEP_MILESTONES[schedule])
    if schedule == "cosine":
        return 0.5 * (1.0 + math.cos(math.pi * progress))
    if schedule == "warmup_cosine":
        if progress < WARMUP_SHARE:
            return (progress + 1e-3) / WARMUP_SHARE
        rest = (progress - WARMUP_SHARE) / (1.0 - WARMUP_SHARE)
        return 0.5 * (1.0 + math.cos(math.pi * rest))
    if schedule == "exponential":
        return 0.02**progress
    if schedule == "linear":
        return max(1.0 - progress, 0.01)
    raise ValueError(f"schedule must be one of {SCHEDULES}, got {schedule!r}")


def check_size(size: str) -> None:
    if size not in SIZES:
        raise ValueError(f"size must be one of {SIZES}, got {size!r}")


RUNS = {"full": 175, "tiny": 2}


def bank_grid(
    size: str,
    prefix: str,
    axes: dict[str, tuple],
    seed: int,
    per_size: dict[str, dict],
    family: str | None = None,
    **fixed: object,
) -> list[dict]:
    """A bank's run grid: :data:`RUNS` ``[size]`` configurations sampled from ``axes`` (``full``, or
    ``tiny`` for CI), each with ``per_size[size]`` (its points and interval) and ``fixed``; ``family``
    names the family, or ``None`` makes each run's data set its family."""
    check_size(size)
    extra = ({"family": family} if family else {}) | per_size[size] | fixed
    configs = sample_grid(prefix, axes, RUNS[size], seed=seed, fixed=extra)
    if family is None:
        for config in configs:
            config["family"] = config["data"]
    return configs


def sample_grid(prefix: str, axes: dict[str, tuple], count: int, seed: int, fixed: dict | None = None) -> list[dict]:
    """``count`` distinct configurations drawn uniformly from ``axes`` (seeded); keys list every axis."""
    rng = np.random.default_rng(seed)
    configs, seen = [], set()
    for _ in range(count * 50):
        if len(configs) == count:
            break
        config = {name: values[int(rng.integers(len(values)))] for name, values in axes.items()}
        config = {k: (v.item() if isinstance(v, np.generic) else v) for k, v in config.items()}
        key = prefix + "/" + "/".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in config.items())
        if key in seen:
            continue
        seen.add(key)
        configs.append({"key": key, **config, **(fixed or {})})
    if len(configs) < count:
        raise RuntimeError(f"{prefix}: the axes allow fewer than {count} distinct configurations")
    return configs


def make_optimizer(name: str, params, lr: float, weight_decay: float = 0.0):
    """The optimiser ``name`` (sgd, momentum, nesterov, adam, adamw, rmsprop)."""
    import torch

    if name == "sgd":
        return torch.optim.SGD(params, lr=lr, weight_decay=weight_decay)
    if name == "momentum":
        return torch.optim.SGD(params, lr=lr, momentum=0.9, weight_decay=weight_decay)
    if name == "nesterov":
        return torch.optim.SGD(params, lr=lr, momentum=0.9, nesterov=True, weight_decay=weight_decay)
    if name == "adam":
        return torch.optim.Adam(params, lr=lr, weight_decay=weight_decay)
    if name == "adamw":
        return torch.optim.AdamW(params, lr=lr, weight_decay=max(weight_decay, 1e-2))
    if name == "rmsprop":
        return torch.optim.RMSprop(params, lr=lr, weight_decay=weight_decay)
    raise ValueError(f"optimizer must be sgd, momentum, nesterov, adam, adamw or rmsprop, got {name!r}")


def batches(n: int, batch_size: int, generator) -> Iterator:
    """Endless minibatch index tensors: a fresh shuffle every epoch, the last short batch dropped."""
    import torch

    batch_size = min(batch_size, n)
    while True:
        order = torch.randperm(n, generator=generator)
        for start in range(0, n - batch_size + 1, batch_size):
            yield order[start : start + batch_size]


def train_and_record(
    model,
    optimizer,
    step_loss: Callable[[], object],
    evaluate: Callable[[], float],
    config: dict,
) -> np.ndarray:
    """Run ``points x interval`` optimiser steps under ``config['schedule']``; ``evaluate()`` after each interval.

    Gradients are clipped at norm 5 so that aggressive settings stay finite (as real jobs clip);
    a run that still diverges records its (large, finite) metric, never a NaN.
    """
    import torch

    points, interval = config["points"], config["interval"]
    base = [g["lr"] for g in optimizer.param_groups]
    values = np.empty(points)
    total = points * interval
    for point in range(points):
        model.train()
        for i in range(interval):
            factor = lr_factor(config["schedule"], (point * interval + i) / total)
            for group, lr in zip(optimizer.param_groups, base):
                group["lr"] = lr * factor
            loss = step_loss()
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
            optimizer.step()
        model.eval()
        with torch.no_grad():
            values[point] = evaluate()
    return values


def run_single_threaded(train: Callable[[dict], np.ndarray], config: dict) -> np.ndarray:
    """``train(config)`` on one torch thread with torch's global RNG forked (restored afterwards)."""
    import torch

    from mara_env.torch_threads import torch_threads

    with torch_threads(1), torch.random.fork_rng(devices=[]):
        torch.manual_seed(config["seed"])
        return train(config)


def finish(config: dict, values: np.ndarray, floor: float, cap: float, x_unit: str) -> dict:
    """The builder's result: evenly spaced steps, the metric clipped to ``[floor, cap]`` (NaN -> cap)."""
    values = np.nan_to_num(np.asarray(values, dtype=np.float64), nan=cap, posinf=cap)
    steps = config["interval"] * np.arange(1, config["points"] + 1, dtype=float)
    return {"steps": steps, "losses": np.clip(values, floor, cap), "x_unit": x_unit}
