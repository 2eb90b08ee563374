"""``PackedVectors``: observation or state vectors stored without their trailing empty rows.

Generalist demonstrations are padded to the largest scenario's table (128 rows), yet most turns use a
few dozen rows, so the padding held most of a warm start's memory (15.4 GB for 180 teacher episodes).
A packed batch keeps each vector's part before the table (``head``) and only the rows it uses
(:meth:`~mara_env.observation.ObservationLayout.rows_in_use`), all vectors' rows stacked in one array.
:meth:`PackedVectors.batch` rebuilds any selection exactly as the padded vectors, optionally cut to
fewer rows as :meth:`~mara_env.observation.ObservationLayout.trimmed` cuts them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from mara_env.observation import ObservationLayout, layout_of


@dataclass
class PackedVectors:
    """Vectors of one padded layout: ``head`` ``(N, table start)``, ``rows`` ``(total rows, row size)``,
    ``offsets`` ``(N + 1,)`` (vector ``i``'s rows are ``rows[offsets[i]:offsets[i + 1]]``) and ``state``
    (whether they are ``state()`` vectors)."""

    head: np.ndarray
    rows: np.ndarray
    offsets: np.ndarray
    layout: ObservationLayout
    state: bool = False

    @classmethod
    def pack(cls, vectors: np.ndarray, state: bool = False) -> PackedVectors:
        """Pack a ``(N, size)`` batch of vectors of one layout (``ValueError`` if it is empty)."""
        vectors = np.asarray(vectors, dtype=np.float32)
        if vectors.ndim != 2 or len(vectors) == 0:
            raise ValueError(f"expected a non-empty (N, size) batch of vectors, got shape {vectors.shape}")
        layout = layout_of(vectors[0], state=state)
        start = (layout.state_slices if state else layout.slices)["table"].start
        used = layout.rows_in_use(vectors, state)
        table = vectors[:, start:].reshape(len(vectors), layout.max_tasks, layout.row_size)
        rows = np.concatenate([table[i, :n] for i, n in enumerate(used)]) if used.sum() else table[:0, 0]
        offsets = np.concatenate(([0], np.cumsum(used))).astype(np.int64)
        return cls(vectors[:, :start].copy(), np.ascontiguousarray(rows), offsets, layout, state)

    @classmethod
    def concatenate(cls, parts: list[PackedVectors]) -> PackedVectors:
        """The parts' vectors in order (they share one padded shape); the list's items are released as
        they are copied, so that the parts and the whole are not all held at once. ``ValueError`` if their
        shapes differ or there are none.

        The shape, not the whole layout, must agree: an observation's layout also names its cluster's
        node count, which its vector does not depend on, so episodes of different sizes padded to one
        table join (the first part's layout describes them all)."""
        if not parts or len({part.shape for part in parts}) > 1:
            raise ValueError(
                "concatenate needs one or more packed parts of one padded shape (pad them to the same size)"
            )
        head = joined([part.head for part in parts])
        starts = np.cumsum([0] + [len(part.rows) for part in parts[:-1]])
        offsets = np.concatenate([[0]] + [part.offsets[1:] + s for part, s in zip(parts, starts)])
        layout, state = parts[0].layout, parts[0].state
        pieces = [part.rows for part in parts]
        parts.clear()
        return cls(head, joined(pieces), offsets.astype(np.int64), layout, state)

    @property
    def shape(self) -> tuple[bool, int, int, int]:
        """What vectors must share to be stored together: whether they are states, the width before the
        table (which holds a state's nodes), the table's rows and each row's width."""
        return self.state, self.head.shape[1], self.layout.max_tasks, self.layout.row_size

    def __len__(self) -> int:
        return len(self.head)

    @property
    def nbytes(self) -> int:
        return self.head.nbytes + self.rows.nbytes + self.offsets.nbytes

    @property
    def rows_in_use(self) -> np.ndarray:
        """Per vector, the rows it uses (as ``ObservationLayout.rows_in_use``)."""
        return np.diff(self.offsets)

    def batch(self, index: torch.Tensor | np.ndarray, rows: int | None = None) -> torch.Tensor:
        """Vectors ``index`` as the padded ``(len(index), size)`` tensor, or with ``rows`` cut to their first
        ``rows`` rows (``ValueError`` if one of them uses more)."""
        index = np.asarray(index, dtype=np.int64)
        head, layout = self.head[index], self.layout
        out = np.zeros((len(index), head.shape[1] + layout.max_tasks * layout.row_size), dtype=np.float32)
        out[:, : head.shape[1]] = head
        table = out[:, head.shape[1] :].reshape(len(index), layout.max_tasks, layout.row_size)
        for i, j in enumerate(index):
            table[i, : self.offsets[j + 1] - self.offsets[j]] = self.rows[self.offsets[j] : self.offsets[j + 1]]
        full = torch.from_numpy(out)
        return full if rows is None else layout.trimmed(full, rows, state=self.state)

    def full(self) -> np.ndarray:
        """Every vector, padded: ``(N, size)``."""
        return self.batch(np.arange(len(self))).numpy()


def joined(pieces: list[np.ndarray], dtype: type | None = None) -> np.ndarray:
    """``np.concatenate(pieces)`` (as ``dtype``), releasing each piece (``pieces[i] = None``) once it is
    copied, so that the pieces and the whole are not held twice at once (a 180-episode warm start on up
    to 128 rows ran out of 24 GB while they were concatenated and then cast, which copied them again)."""
    dtype = pieces[0].dtype if dtype is None else dtype
    out = np.empty((sum(len(piece) for piece in pieces), *pieces[0].shape[1:]), dtype=dtype)
    start = 0
    for index, piece in enumerate(pieces):
        out[start : start + len(piece)] = piece
        start += len(piece)
        pieces[index] = None  # its memory returns before the next piece's pages of out are touched
    return out
