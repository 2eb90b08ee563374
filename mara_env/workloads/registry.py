"""Workloads by name, load presets, and ``describe()``."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

import numpy as np

from mara_env.workloads.bank import SPLITS
from mara_env.workloads.base import DeadlineModel, Workload, arrival_rate, generate_episode, mean_required_work
from mara_env.workloads.recorded import NEW_BANKS, MixedWorkload, RecordedWorkload
from mara_env.workloads.synthetic import SyntheticWorkload

WORKLOADS: dict[str, Callable[[str], Workload]] = {
    "synthetic": lambda split: SyntheticWorkload(),  # fresh curves: no episode reuses a curve
    "vision": lambda split: RecordedWorkload("vision", split),
    "rl": lambda split: RecordedWorkload("rl", split),
    **{name: (lambda split, name=name: RecordedWorkload(name, split)) for name in NEW_BANKS},
    "mixed": MixedWorkload,
}

# Offered load = arrival rate x mean required work / total node speed. ``train`` is the load the
# MARA policy is trained at, calibrated so that good heuristics complete roughly 50-70% of tasks
# (see docs/environment.md); the others are the unseen heavier loads.
LOAD_PRESETS: dict[str, float] = {"train": 1.4, "heavy": 2.1, "extreme": 2.8}


def register_workload(name: str, factory: Callable[[str], Workload]) -> None:
    """Make ``factory(curve_split)`` available as ``workload=name`` in the environment."""
    WORKLOADS[name] = factory


def make_workload(name: str, split: str = "train") -> Workload:
    """The workload registered as ``name``, drawing curves from ``split``.

    ``ValueError`` listing the allowed names (or saying how to build a missing bank) otherwise.
    """
    if name not in WORKLOADS:
        raise ValueError(f"workload must be one of {sorted(WORKLOADS)}, got {name!r}")
    if split not in SPLITS:
        raise ValueError(f"curve_split must be one of {SPLITS}, got {split!r}")
    return WORKLOADS[name](split)


def resolve_load(load: str | float) -> float:
    """A preset name or a positive number, as an offered load."""
    if isinstance(load, str):
        if load not in LOAD_PRESETS:
            raise ValueError(f"load must be one of {sorted(LOAD_PRESETS)} or a number > 0, got {load!r}")
        return LOAD_PRESETS[load]
    if isinstance(load, bool) or not isinstance(load, (int, float)) or not load > 0 or load == float("inf"):
        raise ValueError(f"load must be one of {sorted(LOAD_PRESETS)} or a finite number > 0, got {load!r}")
    return float(load)


@cache
def workload_mean_work(name: str) -> float:
    """Mean required work of a registered workload's ``train`` split (cached; fixed-seed Monte Carlo)."""
    return mean_required_work(make_workload(name))


def effective_load(name: str, load: float, num_nodes: int = 8, horizon: int = 300, episodes: int = 20) -> float:
    """Offered load actually generated (tasks whose deadline passes the horizon are not generated).

    Mean over ``episodes`` fixed-seed episodes of (summed required work) / (horizon x num_nodes).
    """
    workload = make_workload(name)
    rate = arrival_rate(load, num_nodes, workload_mean_work(name))
    total = 0.0
    for seed in range(episodes):
        tasks = generate_episode(workload, np.random.default_rng(seed), rate, horizon, DeadlineModel())
        total += sum(t.required_work for t in tasks)
    return total / (episodes * horizon * num_nodes)


def describe(num_nodes: int = 8, horizon: int = 300) -> str:
    """Print and return a table of every workload x load preset.

    Columns: the nominal offered load, the mean required work of a task, the arrival rate, and the
    effective load of an episode of ``horizon`` slots (lower than nominal near the end of a run).
    """
    lines = [
        f"num_nodes={num_nodes}, horizon={horizon}",
        f"{'workload':<12}{'load':<10}{'offered':>9}{'effective':>11}{'mean work':>11}{'tasks/slot':>12}",
    ]
    for name in sorted(WORKLOADS):
        try:
            mean = workload_mean_work(name)
        except ValueError as err:  # a bank that is not installed
            lines.append(f"{name:<12}unavailable: {err}")
            continue
        for preset, value in LOAD_PRESETS.items():
            eff = effective_load(name, value, num_nodes, horizon)
            rate = value * num_nodes / mean
            lines.append(f"{name:<12}{preset:<10}{value:>9.2f}{eff:>11.2f}{mean:>11.1f}{rate:>12.3f}")
    text = "\n".join(lines)
    print(text)
    return text
