"""``ObservationLayout``: the single source of where every part of the observation and the state lies.

Every node sees one flat ``float32`` vector, and ``state()`` is one flat vector for centralised critics:

- observation: ``header | node | global | K_max task rows``
- state:       ``header | global | M nodes | K_max task rows``

Each task row is ``row features | forecast features | history window``. The header (``max_tasks``,
``history_window``, ``num_nodes``, ``forecasts``) makes both vectors self-describing. The layout
assembles the vectors and splits them again; the split works on numpy arrays and torch tensors alike,
for one vector or a batch (the last axis is the vector).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np

from mara_env.observation.features import (
    FORECAST_FEATURES,
    GLOBAL_FEATURES,
    HEADER,
    NODE_FEATURES,
    ROW_FEATURES,
    WINDOW_FEATURES,
)


def _offsets(parts: tuple[tuple[str, int], ...]) -> dict[str, slice]:
    """Consecutive slices for ``(name, length)`` parts."""
    slices, start = {}, 0
    for name, length in parts:
        slices[name] = slice(start, start + length)
        start += length
    return slices


@dataclass(frozen=True)
class ObservationLayout:
    """Offsets of every named part of the observation and of ``state()`` for one env size."""

    max_tasks: int
    history_window: int
    num_nodes: int
    row_index: dict[str, int] = field(init=False, repr=False, compare=False)
    global_index: dict[str, int] = field(init=False, repr=False, compare=False)
    slices: dict[str, slice] = field(init=False, repr=False, compare=False)
    state_slices: dict[str, slice] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        table = self.max_tasks * self.row_size
        header, node, globals_ = len(HEADER), len(NODE_FEATURES), len(GLOBAL_FEATURES)
        obs = _offsets((("header", header), ("node", node), ("global", globals_), ("table", table)))
        nodes = self.num_nodes * node
        state = _offsets((("header", header), ("global", globals_), ("nodes", nodes), ("table", table)))
        object.__setattr__(self, "row_index", {n: i for i, n in enumerate(ROW_FEATURES + FORECAST_FEATURES)})
        object.__setattr__(self, "global_index", {n: i for i, n in enumerate(GLOBAL_FEATURES)})
        object.__setattr__(self, "slices", obs)
        object.__setattr__(self, "state_slices", state)

    # ------------------------------------------------------------------ sizes
    @property
    def row_inputs(self) -> int:
        """Row and forecast features per row (the columns before the history window)."""
        return len(ROW_FEATURES) + len(FORECAST_FEATURES)

    @property
    def row_size(self) -> int:
        return self.row_inputs + len(WINDOW_FEATURES) * self.history_window

    @property
    def forecast_columns(self) -> slice:
        """The forecast features' columns inside a row."""
        return slice(len(ROW_FEATURES), self.row_inputs)

    @property
    def size(self) -> int:
        """Length of the observation vector."""
        return self.slices["table"].stop

    @property
    def state_size(self) -> int:
        """Length of the ``state()`` vector."""
        return self.state_slices["table"].stop

    # ------------------------------------------------------------------ assembling
    def header(self, forecasts: bool) -> np.ndarray:
        return np.array([self.max_tasks, self.history_window, self.num_nodes, float(forecasts)], dtype=np.float32)

    def observation(self, header: np.ndarray, node: np.ndarray, globals_: np.ndarray, table: np.ndarray) -> np.ndarray:
        """One node's observation vector from its parts (``node`` is that node's feature row)."""
        return np.concatenate((header, node, globals_, table.ravel()))

    def state(self, header: np.ndarray, globals_: np.ndarray, nodes: np.ndarray, table: np.ndarray) -> np.ndarray:
        """The state vector from its parts (``nodes`` is the ``(M, node features)`` matrix)."""
        return np.concatenate((header, globals_, nodes.ravel(), table.ravel()))

    # ------------------------------------------------------------------ splitting
    def split_observation(self, vector: Any) -> tuple[Any, Any, Any, Any]:
        """``(node, globals, rows, windows)`` views of observation vectors (numpy or torch, ``(..., size)``).

        ``rows`` is ``(..., K_max, row_inputs)`` and ``windows`` is ``(..., K_max, H, 2)``.
        """
        s = self.slices
        rows, windows = self._split_table(vector[..., s["table"]])
        return vector[..., s["node"]], vector[..., s["global"]], rows, windows

    def split_state(self, vector: Any) -> tuple[Any, Any, Any, Any]:
        """``(globals, nodes, rows, windows)`` views of state vectors; ``nodes`` is ``(..., M, node features)``."""
        s = self.state_slices
        lead = tuple(vector.shape[:-1])
        nodes = vector[..., s["nodes"]].reshape(*lead, self.num_nodes, len(NODE_FEATURES))
        rows, windows = self._split_table(vector[..., s["table"]])
        return vector[..., s["global"]], nodes, rows, windows

    def _split_table(self, flat: Any) -> tuple[Any, Any]:
        lead = tuple(flat.shape[:-1])
        table = flat.reshape(*lead, self.max_tasks, self.row_size)
        windows = table[..., self.row_inputs :].reshape(*lead, self.max_tasks, self.history_window, 2)
        return table[..., : self.row_inputs], windows

    def slot_part(self, vector: np.ndarray) -> np.ndarray:
        """A copy of observation ``vector`` with what changes between the turns of a slot zeroed (the
        node's features, ``free_nodes``, ``chosen_now``): equal for every node of one slot."""
        out = np.array(vector, dtype=np.float32, copy=True)
        out[self.slices["node"]] = 0.0
        out[self.slices["global"].start + self.global_index["free_nodes"]] = 0.0
        table = out[self.slices["table"]].reshape(self.max_tasks, self.row_size)
        table[:, self.row_index["chosen_now"]] = 0.0
        return out

    def padded(self, vector: np.ndarray, max_tasks: int, num_nodes: int | None = None, state: bool = False):
        """``vector`` (an observation, or a state with ``state=True``) as the layout of an env with
        ``max_tasks`` rows (and, for a state, ``num_nodes`` node rows) sees it: the extra rows are empty
        (``present`` 0) and the extra nodes all zero (speed 0: absent). In an observation,
        ``last_action`` is rescaled so it still names the same row (a policy reads it as an index);
        every other feature keeps its value. Training on envs of several sizes stacks padded vectors
        into one batch.
        """
        num_nodes = self.num_nodes if num_nodes is None else num_nodes
        if max_tasks < self.max_tasks or num_nodes < self.num_nodes:
            raise ValueError(f"cannot pad K={self.max_tasks}, M={self.num_nodes} down to K={max_tasks}, M={num_nodes}")
        big = ObservationLayout(max_tasks, self.history_window, num_nodes if state else self.num_nodes)
        src, dst = (self.state_slices, big.state_slices) if state else (self.slices, big.slices)
        out = np.zeros(big.state_size if state else big.size, dtype=np.float32)
        out[dst["header"]] = vector[src["header"]]
        out[dst["header"].start + HEADER.index("max_tasks")] = max_tasks
        out[dst["global"]] = vector[src["global"]]
        nodes_part = "nodes" if state else "node"
        nodes = out[dst[nodes_part]].reshape(-1, len(NODE_FEATURES))
        nodes[: vector[src[nodes_part]].size // len(NODE_FEATURES)] = vector[src[nodes_part]].reshape(
            -1, len(NODE_FEATURES)
        )
        if state:
            out[dst["header"].start + HEADER.index("num_nodes")] = num_nodes
        else:
            nodes[:, NODE_FEATURES.index("last_action")] *= self.max_tasks / max_tasks
        table = out[dst["table"]].reshape(max_tasks, self.row_size)
        table[: self.max_tasks] = vector[src["table"]].reshape(self.max_tasks, self.row_size)
        return out

    def rows_in_use(self, vectors: Any, state: bool = False) -> np.ndarray:
        """Per vector (numpy or torch, ``(..., size)``), how many leading rows hold every present row:
        the last present row's index + 1, 0 for an empty table. Rows after it can be cut
        (:meth:`trimmed`) without changing what the vector means."""
        start = (self.state_slices if state else self.slices)["table"].start
        table = np.asarray(vectors[..., start:])
        present = table.reshape(*table.shape[:-1], self.max_tasks, self.row_size)[..., self.row_index["present"]] > 0.5
        return (present * np.arange(1, self.max_tasks + 1)).max(axis=-1)

    def trimmed(self, vectors: Any, max_tasks: int, state: bool = False) -> Any:
        """Copies of ``vectors`` (numpy or torch, ``(..., size)``) cut to their first ``max_tasks`` rows, as
        the layout of an env with ``max_tasks`` rows sees them: the inverse of :meth:`padded` for rows
        (``last_action`` rescaled so it still names the same row, every other feature kept).

        ``ValueError`` if ``max_tasks`` is not in ``[1, K_max]`` or a cut row is present.
        """
        if not 1 <= max_tasks <= self.max_tasks:
            raise ValueError(f"max_tasks must be in [1, {self.max_tasks}] to trim this layout's rows, got {max_tasks}")
        in_use = self.rows_in_use(vectors, state)
        if np.any(in_use > max_tasks):
            raise ValueError(f"cannot trim to {max_tasks} rows: row {int(in_use.max()) - 1} is present")
        slices = self.state_slices if state else self.slices
        out = vectors[..., : slices["table"].start + max_tasks * self.row_size]
        out = out.clone() if hasattr(out, "clone") else out.copy()
        out[..., slices["header"].start + HEADER.index("max_tasks")] = max_tasks
        if not state:
            out[..., slices["node"].start + NODE_FEATURES.index("last_action")] *= self.max_tasks / max_tasks
        return out

    def with_forecasts(self, vector: np.ndarray, features: np.ndarray) -> np.ndarray:
        """A copy of observation ``vector`` whose forecast columns are ``features`` ``(K_max, 5)``."""
        out = np.array(vector, dtype=np.float32, copy=True)
        table = out[self.slices["table"]].reshape(self.max_tasks, self.row_size)
        table[:, self.forecast_columns] = features
        out[self.slices["header"].start + HEADER.index("forecasts")] = 1.0
        return out


@lru_cache(maxsize=64)
def _cached_layout(max_tasks: int, history_window: int, num_nodes: int) -> ObservationLayout:
    return ObservationLayout(max_tasks, history_window, num_nodes)


def layout_of(vector: Any, state: bool = False) -> ObservationLayout:
    """Read the layout from an observation's (or, with ``state=True``, a state's) header.

    ``ValueError`` if the vector is not one.
    """
    vec = np.asarray(vector)
    what = "state" if state else "observation"
    if vec.ndim != 1 or vec.size < len(HEADER):
        raise ValueError(f"expected a flat {what} vector, got shape {vec.shape}")
    k, h, m = (int(round(float(v))) for v in vec[:3])
    if k < 1 or h < 1 or m < 1:
        raise ValueError(f"vector of size {vec.size} has no valid {what} header (K={k}, H={h}, M={m})")
    layout = _cached_layout(k, h, m)
    if (layout.state_size if state else layout.size) != vec.size:
        raise ValueError(f"{what} vector of size {vec.size} does not match its header (K={k}, H={h}, M={m})")
    return layout
