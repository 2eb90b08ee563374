"""Pure-numpy cluster simulator: nodes, tasks, slots, arrivals and scoring. No PettingZoo import."""

from mara_env.core.config import SimConfig
from mara_env.core.curve import LossCurve
from mara_env.core.faults import FaultModel
from mara_env.core.metrics import RunCounters
from mara_env.core.simulator import IDLE, Simulator, SlotResult
from mara_env.core.task import TaskSpec, TaskState, parallel_efficiency

__all__ = [
    "IDLE",
    "FaultModel",
    "LossCurve",
    "RunCounters",
    "SimConfig",
    "Simulator",
    "SlotResult",
    "TaskSpec",
    "TaskState",
    "parallel_efficiency",
]
