"""Minibatches of similar table size, cut to the rows they use: the generalist's training speed-up.

Generalist training pads every scenario's vectors to the largest ``K_max`` it draws (128 rows at most),
so a 4-node scenario with 9 rows in use costs a transformer pass over 129 tokens. Empty rows take no
part in attention and every row's score depends only on present rows, so cutting the trailing empty
rows of a batch (:meth:`~mara_env.observation.ObservationLayout.trimmed`) leaves the logits of the
kept actions and the values unchanged up to float rounding. That pays only if a batch holds
scenarios of similar size, so :func:`size_buckets` sorts samples by the rows they use within pools of
shuffled samples before cutting them into batches.
"""

from __future__ import annotations

import numpy as np
import torch

from mara_agents.mara.packed_vectors import PackedVectors
from mara_env.observation import layout_of

POOL_BATCHES = 32  # batches per sorted pool: large enough for homogeneous batches, small enough to mix


def rows_needed(obs: np.ndarray | PackedVectors, states: np.ndarray | PackedVectors) -> np.ndarray:
    """Per sample, the rows its observation and its state use (at least 1); padded arrays or packed."""
    return np.maximum(np.maximum(_rows_in_use(obs, False), _rows_in_use(states, True)), 1)


def _rows_in_use(vectors: np.ndarray | PackedVectors, state: bool) -> np.ndarray:
    if isinstance(vectors, np.ndarray):
        return layout_of(vectors[0], state=state).rows_in_use(vectors, state)
    return vectors.rows_in_use  # packed: counted when they were packed


def size_buckets(
    sizes: np.ndarray, batch_size: int, generator: torch.Generator | None, pool_batches: int = POOL_BATCHES
) -> list[torch.Tensor]:
    """Index batches that cover every sample once, each of samples of similar ``sizes``, in random order.

    Samples are shuffled, split into pools of ``pool_batches * batch_size``, sorted by size within a pool
    (ties stay in shuffled order) and cut into batches of ``batch_size`` (the last of a pool may be
    smaller); the batches are then shuffled. ``generator=None`` draws from torch's default generator.
    """
    if batch_size < 1 or pool_batches < 1:
        raise ValueError(f"batch_size and pool_batches must be >= 1, got {batch_size} and {pool_batches}")
    order = torch.randperm(len(sizes), generator=generator)
    shuffled = torch.as_tensor(np.asarray(sizes))[order]
    batches = []
    pool = batch_size * pool_batches
    for begin in range(0, len(order), pool):
        part = order[begin : begin + pool][torch.sort(shuffled[begin : begin + pool], stable=True).indices]
        batches.extend(part.split(batch_size))
    return [batches[i] for i in torch.randperm(len(batches), generator=generator).tolist()]


def trim_batch(
    obs: torch.Tensor, masks: torch.Tensor, states: torch.Tensor, rows: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """A batch's observations, action masks and states cut to their first ``rows`` rows."""
    return layout_of(obs[0].numpy()).trimmed(obs, rows), masks[:, : rows + 1], trim_states(states, rows)


def trim_states(states: torch.Tensor, rows: int) -> torch.Tensor:
    """A batch of ``state()`` vectors cut to their first ``rows`` rows."""
    return layout_of(states[0].numpy(), state=True).trimmed(states, rows, state=True)


def padded_logits(logits: torch.Tensor, max_tasks: int, fill: float) -> torch.Tensor:
    """Logits of a trimmed batch widened back to ``max_tasks + 1`` actions, the cut rows set to ``fill``."""
    missing = max_tasks + 1 - logits.shape[-1]
    return torch.nn.functional.pad(logits, (0, missing), value=fill) if missing > 0 else logits


def critic_values(net: torch.nn.Module, states: torch.Tensor, sizes: np.ndarray, chunk: int = 1024) -> torch.Tensor:
    """``net.value`` of a whole batch of states, in chunks of similar ``sizes`` cut to the rows they use."""
    out = torch.empty(states.shape[0])
    for idx in torch.as_tensor(np.argsort(sizes, kind="stable")).split(chunk):
        out[idx] = net.value(trim_states(states[idx], int(sizes[idx].max())))
    return out
