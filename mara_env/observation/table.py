"""``TableBuilder``: the ``(K_max, row_size)`` task table of a slot, rebuilt incrementally."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from mara_env.observation.features import BOUND, ROW_FEATURES, SLOT_SCALE, WORK_SCALE, safe_log_ratio
from mara_env.observation.layout import ObservationLayout

if TYPE_CHECKING:
    from mara_env.core import Simulator, TaskState


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
            table[:, layout.forecast_columns] = np.clip(forecasts, -BOUND, BOUND)
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
