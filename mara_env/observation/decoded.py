"""Decoded observations: named views of one observation vector, in physical units where they have one.

``decode(obs)`` needs nothing but the vector (its header carries the layout). Schedulers read
``obs.slots_left``, ``obs.remaining("p50")`` (node-slots), ``obs.nodes_taken`` and so on, instead of
un-scaling columns themselves. Reading a forecast feature of an observation made without a forecaster
raises :class:`MissingForecastsError` instead of returning zeros.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mara_env.observation.features import (
    FORECAST_FEATURES,
    GLOBAL_FEATURES,
    HEADER,
    NODE_FEATURES,
    SLOT_SCALE,
    WORK_SCALE,
)
from mara_env.observation.layout import ObservationLayout, layout_of

QUANTILE_COLUMNS = {"p10": "remaining_p10", "p50": "remaining_p50", "p90": "remaining_p90"}


class MissingForecastsError(ValueError):
    """A forecast feature was read from an observation of an env that computes none."""


@dataclass(frozen=True)
class DecodedObservation:
    """Named views into one observation vector (no copies of the table)."""

    layout: ObservationLayout
    node: dict[str, float]
    globals: dict[str, float]
    rows: np.ndarray  # (K_max, row_inputs): row and forecast features, scaled as in the vector
    window: np.ndarray  # (K_max, H, 2): cumulative work / WORK_SCALE, ln(loss / target)
    has_forecasts: bool

    def row(self, name: str) -> np.ndarray:
        """Column ``name`` (a row or forecast feature) for every row, as stored (scaled)."""
        if name in FORECAST_FEATURES and not self.has_forecasts:
            raise MissingForecastsError(
                f"the observation has no forecast features ({name!r} was read): the env runs with "
                "forecaster='none'. A scheduler that reads forecasts declares it in its `requirements` "
                "(EnvRequirements(reads_forecasts=True), the default of ObservationScheduler), and a "
                "hand-made env needs forecaster='flow' (or another forecaster)."
            )
        return self.rows[:, self.layout.row_index[name]]

    # ------------------------------------------------------------------ rows, physical units
    @property
    def present(self) -> np.ndarray:
        """Bool per row: the row holds a task."""
        return self.row("present") > 0.5

    @property
    def slots_left(self) -> np.ndarray:
        """Slots each row's task may still train, this one included."""
        return np.rint(self.row("slots_left") * SLOT_SCALE)

    @property
    def age(self) -> np.ndarray:
        """Slots since each row's task arrived."""
        return np.rint(self.row("age") * SLOT_SCALE)

    @property
    def work_done(self) -> np.ndarray:
        """Cumulative work of each row's task, in node-slots."""
        return self.row("work_done") * WORK_SCALE

    @property
    def nodes_taken(self) -> np.ndarray:
        """Nodes that chose each row earlier in this slot."""
        return np.rint(self.row("chosen_now") * self.layout.num_nodes)

    @property
    def nodes_last_slot(self) -> np.ndarray:
        """Nodes that trained each row's task last slot."""
        return np.rint(self.row("nodes_last_slot") * self.layout.num_nodes)

    def remaining(self, quantile: str = "p50") -> np.ndarray:
        """Forecast remaining work to target in node-slots, at ``quantile`` (``p10``, ``p50``, ``p90``)."""
        if quantile not in QUANTILE_COLUMNS:
            raise ValueError(f"quantile must be one of {sorted(QUANTILE_COLUMNS)}, got {quantile!r}")
        return self.row(QUANTILE_COLUMNS[quantile]) * WORK_SCALE

    @property
    def forecast_valid(self) -> np.ndarray:
        """Bool per row: the forecaster produced a forecast for it."""
        return self.row("forecast_valid") > 0.5

    def window_points(self, row: int) -> tuple[np.ndarray, np.ndarray]:
        """The observed ``(work in node-slots, loss)`` points of ``row`` in its window, oldest first."""
        seen = int(round(self.row("observations")[row] * self.layout.history_window))
        points = self.window[row, -max(seen, 1) :]
        return points[:, 0] * WORK_SCALE, self.row("target")[row] * np.exp(points[:, 1])

    # ------------------------------------------------------------------ the node and the slot
    @property
    def node_index(self) -> int:
        return int(round(self.node["node_id"] * self.layout.num_nodes))

    @property
    def last_row(self) -> int:
        """The row this node trained last slot (-1 if it idled)."""
        return int(round(self.node["last_action"] * self.layout.max_tasks)) - 1

    @property
    def up_nodes(self) -> int:
        """Nodes up this slot."""
        return int(round(self.globals["up_nodes"] * self.layout.num_nodes))

    @property
    def free_nodes(self) -> int:
        """Nodes still to decide this slot, this one included."""
        return int(round(self.globals["free_nodes"] * self.layout.num_nodes))


def decode(observation: np.ndarray | dict) -> DecodedObservation:
    """Split an observation (the vector, or the env's ``{"observation", "action_mask"}`` dict) by name."""
    vec = observation["observation"] if isinstance(observation, dict) else observation
    vec = np.asarray(vec)
    layout = layout_of(vec)
    node, globals_, rows, window = layout.split_observation(vec)
    return DecodedObservation(
        layout=layout,
        node=dict(zip(NODE_FEATURES, node.tolist())),
        globals=dict(zip(GLOBAL_FEATURES, globals_.tolist())),
        rows=rows,
        window=window,
        has_forecasts=bool(vec[HEADER.index("forecasts")] > 0.5),
    )
