"""Workloads: where tasks come from (curve families or banks), arrival processes and load presets."""

from mara_env.workloads.base import (
    DeadlineModel,
    TaskDraw,
    Workload,
    arrival_rate,
    generate_episode,
    mean_required_work,
    poisson_arrival_slots,
)
from mara_env.workloads.registry import (
    LOAD_PRESETS,
    WORKLOADS,
    describe,
    make_workload,
    register_workload,
    resolve_load,
    workload_mean_work,
)
from mara_env.workloads.synthetic import SyntheticWorkload

__all__ = [
    "LOAD_PRESETS",
    "WORKLOADS",
    "DeadlineModel",
    "SyntheticWorkload",
    "TaskDraw",
    "Workload",
    "arrival_rate",
    "describe",
    "generate_episode",
    "make_workload",
    "mean_required_work",
    "poisson_arrival_slots",
    "register_workload",
    "resolve_load",
    "workload_mean_work",
]
