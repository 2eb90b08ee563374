"""The observation vector: its layout, a decoder by name, and the builder that fills it.

Every node sees one flat ``float32`` vector laid out as

``header | node | global | K_max task rows``

where each task row is ``row features | forecast features | history window``. The header
(``max_tasks``, ``history_window``, ``num_nodes``) makes the vector self-describing, so
:func:`decode` needs nothing but the vector. Times are in units of :data:`SLOT_SCALE` slots and work
in units of :data:`WORK_SCALE` node-slots, so features stay O(1) across configurations.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from mara_env.core import Simulator, TaskState

SLOT_SCALE = 100.0
WORK_SCALE = 100.0
BOUND = 1.0e4  # every feature is clipped into [-BOUND, BOUND]

HEADER = ("max_tasks", "history_window", "num_nodes")
NODE_FEATURES = ("node_id", "speed", "up", "last_action")
GLOBAL_FEATURES = ("time", "free_nodes", "up_nodes", "live_tasks", "queued_tasks")
ROW_FEATURES = (
    "present",
    "slots_left",
    "age",
    "loss",
    "best_loss",
    "target",
    "log_loss_to_target",
    "progress",
    "work_done",
    "nodes_last_slot",
    "chosen_now",
    "scaling_exponent",
    "observations",
)
FORECAST_FEATURES = ("remaining_p10", "remaining_p50", "remaining_p90", "p_finish", "forecast_valid")
WINDOW_FEATURES = ("window_work", "window_log_loss")

FEATURE_DOCS = {
    "max_tasks": "K_max, rows in the table",
    "history_window": "H, points in each row's history window",
    "num_nodes": "M, nodes in the cluster",
    "node_id": "this node's index / M",
    "speed": "this node's relative speed",
    "up": "1 if this node is up, 0 if down",
    "last_action": "action this node took last slot / K_max (0 = idle)",
    "time": "current slot / horizon",
    "free_nodes": "nodes still to decide this slot / M",
    "up_nodes": "nodes up / M",
    "live_tasks": "occupied rows / K_max",
    "queued_tasks": "tasks waiting for a row / K_max",
    "present": "1 if the row holds a task",
    "slots_left": "slots left to train including this one (deadline - slot + 1) / SLOT_SCALE",
    "age": "slots since arrival / SLOT_SCALE",
    "loss": "latest reported loss",
    "best_loss": "lowest reported loss so far (completion tests this)",
    "target": "target loss",
    "log_loss_to_target": "ln(best_loss / target); <= 0 means done",
    "progress": "log-loss progress from the first loss to the target, in [0, 1]",
    "work_done": "cumulative work / WORK_SCALE",
    "nodes_last_slot": "nodes that trained the task last slot / M",
    "chosen_now": "nodes earlier in this slot that chose this row / M (the autoregressive signal)",
    "scaling_exponent": "alpha of the task's data-parallel scaling n ** alpha",
    "observations": "observed points (including work 0) / H, capped at 1",
    "remaining_p10": "forecast remaining work to target, 10th percentile / WORK_SCALE (0 without forecaster)",
    "remaining_p50": "forecast remaining work, median / WORK_SCALE",
    "remaining_p90": "forecast remaining work, 90th percentile / WORK_SCALE",
    "p_finish": "forecast probability of finishing in time at the current share",
    "forecast_valid": "1 if the forecaster produced a forecast for this row",
    "window_work": "window point: cumulative work / WORK_SCALE (oldest first, newest last, zero-padded left)",
    "window_log_loss": "window point: ln(loss / target)",
}


@dataclass(frozen=True)
class ObservationLayout:
    """Offsets of every named part of the flat observation vector."""

    max_tasks: int
    history_window: int
    num_nodes: int
    row_index: dict[str, int] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        names = ROW_FEATURES + FORECAST_FEATURES
        object.__setattr__(self, "row_index", {n: i for i, n in enumerate(names)})

    @property
    def row_size(self) -> int:
        return len(ROW_FEATURES) + len(FORECAST_FEATURES) + len(WINDOW_FEATURES) * self.history_window

    @property
    def table_offset(self) -> int:
        return len(HEADER) + len(NODE_FEATURES) + len(GLOBAL_FEATURES)

    @property
    def size(self) -> int:
        return self.table_offset + self.max_tasks * self.row_size

    @cached_property
    def slices(self) -> dict[str, slice]:
        a = len(HEADER)
        b = a + len(NODE_FEATURES)
        c = b + len(GLOBAL_FEATURES)
        return {"header": slice(0, a), "node": slice(a, b), "global": slice(b, c), "table": slice(c, self.size)}

    @property
    def window_offset(self) -> int:
        """Column where the history window starts inside a row."""
        return len(ROW_FEATURES) + len(FORECAST_FEATURES)

    def header(self) -> np.ndarray:
        return np.array([self.max_tasks, self.history_window, self.num_nodes], dtype=np.float32)


@dataclass(frozen=True)
class DecodedObservation:
    """Named views into one observation vector (no copies)."""

    layout: ObservationLayout
    node: dict[str, float]
    globals: dict[str, float]
    rows: np.ndarray  # (K_max, len(ROW_FEATURES) + len(FORECAST_FEATURES))
    window: np.ndarray  # (K_max, H, 2): cumulative work, ln(loss / target)

    def row(self, name: str) -> np.ndarray:
        """Column ``name`` (a row or forecast feature) for every row."""
        return self.rows[:, self.layout.row_index[name]]

    @property
    def node_index(self) -> int:
        return int(round(self.node["node_id"] * self.layout.num_nodes))


def layout_of(vector: np.ndarray) -> ObservationLayout:
    """Read the layout from a vector's header; ``ValueError`` if the vector is not an observation."""
    vec = np.asarray(vector)
    if vec.ndim != 1 or vec.size < len(HEADER):
        raise ValueError(f"expected a flat observation vector, got shape {vec.shape}")
    k, h, m = (int(round(float(v))) for v in vec[: len(HEADER)])
    layout = ObservationLayout(max_tasks=k, history_window=h, num_nodes=m)
    if k < 1 or h < 1 or m < 1 or layout.size != vec.size:
        raise ValueError(f"vector of size {vec.size} does not match its header (K={k}, H={h}, M={m})")
    return layout


def decode(observation: np.ndarray | dict) -> DecodedObservation:
    """Split an observation (the vector, or the env's ``{"observation", "action_mask"}`` dict) by name."""
    vec = observation["observation"] if isinstance(observation, dict) else observation
    vec = np.asarray(vec)
    layout = layout_of(vec)
    s = layout.slices
    table = vec[s["table"]].reshape(layout.max_tasks, layout.row_size)
    w = layout.window_offset
    return DecodedObservation(
        layout=layout,
        node=dict(zip(NODE_FEATURES, vec[s["node"]].tolist())),
        globals=dict(zip(GLOBAL_FEATURES, vec[s["global"]].tolist())),
        rows=table[:, :w],
        window=table[:, w:].reshape(layout.max_tasks, layout.history_window, len(WINDOW_FEATURES)),
    )


def safe_log_ratio(a: float, b: float) -> float:
    """``ln(a / b)`` for positive inputs, clipped to the observation bound."""
    return min(max(math.log(a / b), -BOUND), BOUND)


class TableBuilder:
    """Builds the ``(K_max, row_size)`` task table at the start of each slot.

    A row's loss, progress and window features change only when its task trains, so they are cached
    per task and recomputed only then; the time features are refreshed every slot.
    """

    def __init__(self, layout: ObservationLayout) -> None:
        self.layout = layout
        self._cache: dict[int, tuple[int, np.ndarray]] = {}
        # Per task: points already converted, and the last H window points flattened.
        self._points: dict[int, tuple[int, list[float]]] = {}

    def reset(self) -> None:
        self._cache, self._points = {}, {}

    def build(self, sim: Simulator, forecasts: np.ndarray | None = None) -> np.ndarray:
        """The table for the simulator's current slot; ``chosen_now`` starts at 0.

        ``forecasts`` is an optional ``(K_max, len(FORECAST_FEATURES))`` array.
        """
        layout, idx = self.layout, self.layout.row_index
        table = np.zeros((layout.max_tasks, layout.row_size), dtype=np.float32)
        cache: dict[int, tuple[int, np.ndarray]] = {}
        rows, deadlines, arrivals, nodes = [], [], [], []
        for row, task in enumerate(sim.rows):
            if task is None:
                continue
            points = len(task.history_work)
            hit = self._cache.get(task.spec.task_id)
            if hit is None or hit[0] != points:
                hit = (points, self._task_row(task))
            cache[task.spec.task_id] = hit
            table[row] = hit[1]
            rows.append(row)
            deadlines.append(task.spec.deadline)
            arrivals.append(task.spec.arrival)
            nodes.append(task.nodes_last_slot)
        self._cache = cache
        self._points = {k: v for k, v in self._points.items() if k in cache}
        table[rows, idx["slots_left"]] = (np.asarray(deadlines) - sim.slot + 1) / SLOT_SCALE
        table[rows, idx["age"]] = (sim.slot - np.asarray(arrivals)) / SLOT_SCALE
        table[rows, idx["nodes_last_slot"]] = np.asarray(nodes) / layout.num_nodes
        if forecasts is not None:
            f0 = len(ROW_FEATURES)
            table[:, f0 : f0 + len(FORECAST_FEATURES)] = np.clip(forecasts, -BOUND, BOUND)
        return table

    def _task_row(self, task: TaskState) -> np.ndarray:
        """The features of a task that change only when it trains (time features left at 0)."""
        layout, h, spec = self.layout, self.layout.history_window, task.spec
        seen, points = self._points.get(spec.task_id, (0, []))
        for k in range(max(seen, len(task.history_work) - h), len(task.history_work)):  # only new points
            points += (min(task.history_work[k] / WORK_SCALE, BOUND), safe_log_ratio(task.history_loss[k], spec.target))
        del points[: max(0, len(points) - 2 * h)]
        self._points[spec.task_id] = (len(task.history_work), points)
        r = np.zeros(layout.row_size, dtype=np.float32)
        # In ROW_FEATURES order; slots_left, age, nodes_last_slot and chosen_now are set per slot.
        r[: len(ROW_FEATURES)] = (
            1.0,
            0.0,
            0.0,
            min(task.history_loss[-1], BOUND),
            min(task.best_loss, BOUND),
            min(spec.target, BOUND),
            safe_log_ratio(task.best_loss, spec.target),
            task.progress,
            min(task.work / WORK_SCALE, BOUND),
            0.0,
            0.0,
            spec.scaling_exponent,
            min(len(task.history_work) / h, 1.0),
        )
        r[layout.row_size - len(points) :] = points
        return r
