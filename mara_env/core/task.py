"""Training tasks: what a workload generates (``TaskSpec``) and what the simulator tracks (``TaskState``)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from mara_env.core.curve import LossCurve


def parallel_efficiency(num_nodes: int, scaling_exponent: float) -> float:
    """Per-node efficiency ``eff(n) = n ** (alpha - 1)`` of data-parallel training on ``n`` nodes.

    ``eff(1) = 1`` and ``eff`` decreases in ``n`` for ``alpha < 1``, so ``n`` equal nodes deliver
    ``n ** alpha`` node-equivalents: sublinear scaling, steeper for small ``alpha``.
    """
    if num_nodes <= 1:
        return 1.0
    return float(num_nodes ** (scaling_exponent - 1.0))


@dataclass(frozen=True)
class TaskSpec:
    """A task as a workload generates it; immutable.

    Parameters
    ----------
    task_id:
        Unique within an episode (increasing with arrival).
    arrival:
        Slot ``b_k`` in which the task appears.
    deadline:
        Last slot ``d_k`` in which it may train (``>= arrival``).
    target:
        Loss ``eps_k`` to reach.
    curve:
        The hidden loss curve over cumulative work.
    scaling_exponent:
        ``alpha`` in ``(0, 1]`` of :func:`parallel_efficiency`.
    family:
        Name of the curve family or bank it came from (metadata only).
    switch_factor:
        Multiplies the cluster's switch cost for this task (checkpoints differ in size), >= 0.
    """

    task_id: int
    arrival: int
    deadline: int
    target: float
    curve: LossCurve
    scaling_exponent: float = 0.8
    family: str = ""
    switch_factor: float = 1.0

    def __post_init__(self) -> None:
        if self.arrival < 0:
            raise ValueError(f"task {self.task_id}: arrival must be >= 0, got {self.arrival}")
        if self.deadline < self.arrival:
            raise ValueError(f"task {self.task_id}: deadline ({self.deadline}) must be >= arrival ({self.arrival})")
        if not 0.0 < self.scaling_exponent <= 1.0:
            raise ValueError(f"task {self.task_id}: scaling_exponent must be in (0, 1], got {self.scaling_exponent}")
        if not self.switch_factor >= 0:
            raise ValueError(f"task {self.task_id}: switch_factor must be >= 0, got {self.switch_factor}")
        if not self.target > 0:
            raise ValueError(f"task {self.task_id}: target must be > 0, got {self.target}")

    @property
    def required_work(self) -> float:
        """Least cumulative work after which the task reports a loss at or below its target."""
        return self.curve.work_to_reach(self.target)


@dataclass
class TaskState:
    """A live task inside the simulator."""

    spec: TaskSpec
    work: float = 0.0
    # Observed (work, loss) points, starting with the untrained model's loss at work 0.
    history_work: list[float] = field(default_factory=list)
    history_loss: list[float] = field(default_factory=list)
    best_loss: float = float("inf")
    nodes_last_slot: int = 0
    row: int = -1
    progress: float = 0.0

    def __post_init__(self) -> None:
        first = self.spec.curve.loss_at(0.0)
        self.history_work.append(0.0)
        self.history_loss.append(first)
        self.best_loss = first
        self.progress = self._progress()

    @property
    def initial_loss(self) -> float:
        return self.history_loss[0]

    def train(self, work: float) -> None:
        """Credit ``work`` units and record the loss reported at the new cumulative work."""
        self.work += work
        curve = self.spec.curve
        self.history_work.append(self.work)
        self.history_loss.append(curve.loss_at(self.work))
        self.best_loss = curve.best_at(self.work)
        self.progress = self._progress()

    @property
    def reached_target(self) -> bool:
        return self.best_loss <= self.spec.target

    def _progress(self) -> float:
        """Progress toward the target in log-loss, in ``[0, 1]``: 0 untrained, 1 at the target."""
        start, target = self.initial_loss, self.spec.target
        if start <= target:
            return 1.0
        done = (math.log(start) - math.log(self.best_loss)) / (math.log(start) - math.log(target))
        return min(max(done, 0.0), 1.0)
