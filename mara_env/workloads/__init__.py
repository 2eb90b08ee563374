"""Workloads: where tasks come from (curve families or banks), arrival processes and load presets."""

from mara_env.workloads.arrivals import (
    ArrivalPlan,
    ArrivalProcess,
    BurstyArrivals,
    PoissonArrivals,
    TraceArrivals,
    make_arrivals,
)
from mara_env.workloads.bank import SPLITS, CurveBank, read_bank, save_bank
from mara_env.workloads.base import (
    DeadlineModel,
    TaskDraw,
    TaskScale,
    Workload,
    arrival_rate,
    generate_episode,
    mean_required_work,
)
from mara_env.workloads.recorded import BANK_NAMES, MixedWorkload, RecordedWorkload, load_bank
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
    "BANK_NAMES",
    "SPLITS",
    "ArrivalPlan",
    "ArrivalProcess",
    "BurstyArrivals",
    "CurveBank",
    "MixedWorkload",
    "PoissonArrivals",
    "RecordedWorkload",
    "TaskScale",
    "TraceArrivals",
    "load_bank",
    "make_arrivals",
    "read_bank",
    "save_bank",
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
    "register_workload",
    "resolve_load",
    "workload_mean_work",
]
