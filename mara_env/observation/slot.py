"""``SlotObservations``: what every node sees during one slot, and the global state, built once per slot.

This is the simulator-side owner of the observation (the role ``safely_observe`` plays in PettingZoo's
``sisl/pursuit``): at the start of a slot it builds the task table (with the forecasts, computed once
for the slot), the node features, the global features and the action masks; as nodes choose, it
updates ``chosen_now`` and the count of nodes still to decide. The AEC env only maps agents to nodes.
It knows nothing of PettingZoo.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from mara_env.observation.layout import ObservationLayout
from mara_env.observation.table import TableBuilder

if TYPE_CHECKING:
    from mara_env.core import Simulator
    from mara_env.forecast.features import ForecastFeatures


class SlotObservations:
    """Observations, masks and state of the current slot of one simulator.

    Parameters
    ----------
    layout:
        Where every part of the vectors lies.
    forecasts:
        The per-slot forecast feature builder, or ``None`` for an env without forecasts (the header's
        ``forecasts`` flag is then 0 and the forecast columns stay 0).
    """

    def __init__(self, layout: ObservationLayout, forecasts: ForecastFeatures | None) -> None:
        self.layout = layout
        self.forecasts = forecasts
        self._tables = TableBuilder(layout)
        self._header = layout.header(forecasts=forecasts is not None)
        self._chosen = layout.row_index["chosen_now"]
        self._free = layout.global_index["free_nodes"]
        self._idle_mask = np.eye(1, layout.max_tasks + 1, dtype=np.int8)[0]
        self.turn = 0

    def reset(self, noise_seed: int | None = None) -> None:
        """Forget every cached row and forecast (a new episode); the forecaster's noise restarts from
        ``noise_seed`` (:meth:`~mara_env.forecast.features.ForecastFeatures.reset`)."""
        self._tables.reset()
        if self.forecasts is not None:
            self.forecasts.reset(noise_seed)

    def begin(self, sim: Simulator) -> None:
        """Build the slot's table, masks, node and global features; no node has chosen yet."""
        layout, m, k = self.layout, self.layout.num_nodes, self.layout.max_tasks
        self.sim, self.turn = sim, 0
        features = self.forecasts.features(sim) if self.forecasts is not None else None
        self.table = self._tables.build(sim, features)
        task_mask = np.zeros(k + 1, dtype=np.int8)
        task_mask[0] = 1
        for row, task in enumerate(sim.rows):
            if task is not None and task.spec.deadline >= sim.slot:
                task_mask[row + 1] = 1
        self.task_mask = task_mask
        values = {
            "time": sim.slot / sim.config.horizon,
            "free_nodes": 1.0,
            "up_nodes": sim.node_up.sum() / m,
            "live_tasks": task_mask[1:].sum() / k,
            "queued_tasks": len(sim.queue) / k,
            # a slow signal of the offered load: it settles within an episode, where the fill swings
            "arrival_rate": sim.counters.arrived / (sim.slot + 1) / m,
        }
        self.globals = np.array([values[name] for name in layout.global_index], dtype=np.float32)
        columns = (np.arange(m) / m, sim.speeds, sim.node_up, (sim.last_row + 1) / k)
        self.nodes = np.stack(columns, axis=1).astype(np.float32)

    def choose(self, row: int | None) -> None:
        """The node whose turn it is chose ``row`` (``None``: idle); the next node's turn begins.

        After the last node the turn wraps to 0, so a finished episode observes as the slot's start.
        """
        if row is not None:
            self.table[row, self._chosen] += 1.0 / self.layout.num_nodes
        self.turn = (self.turn + 1) % self.layout.num_nodes

    def action_mask(self, node: int) -> np.ndarray:
        """Allowed actions of ``node`` now: idle always; occupied rows when the node is up."""
        return (self.task_mask if self.sim.node_up[node] else self._idle_mask).copy()

    def observe(self, node: int) -> dict[str, np.ndarray]:
        """``node``'s observation dict: the vector and its action mask."""
        self._refresh_free_nodes()
        vector = self.layout.observation(self._header, self.nodes[node], self.globals, self.table)
        return {"observation": vector, "action_mask": self.action_mask(node)}

    def state(self) -> np.ndarray:
        """The global state: header, globals, every node's features, the table."""
        self._refresh_free_nodes()
        return self.layout.state(self._header, self.globals, self.nodes, self.table)

    def _refresh_free_nodes(self) -> None:
        m = self.layout.num_nodes
        self.globals[self._free] = (m - self.turn) / m
