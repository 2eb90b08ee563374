"""The rows the planners would pick at one node's turn, as one-hots over the table: what the slot actor's
skip paths read (:class:`~.slot_network.SlotMARANet` with ``pick_hints`` and ``uniform_pick``).

Each rule is a smallest key over the allowed rows, batched over observations; the numpy actor has the
same rules for one observation (:mod:`~.numpy_actor`).
"""

from __future__ import annotations

import torch

from mara_agents.mara.network import PRESENT
from mara_env.observation import ROW_FEATURES

AGE = ROW_FEATURES.index("age")


def smallest_key_one_hot(key: torch.Tensor, where: torch.Tensor) -> torch.Tensor:
    """One-hots ``(n, K)`` of each row's smallest key (the lowest index on ties), zeros where ``where``
    ``(n, K)`` allows no row (a planner that idles)."""
    one_hot = torch.zeros_like(key).scatter_(-1, key.argmin(-1, keepdim=True), 1.0)
    return one_hot * where.any(-1, keepdim=True)


def planner_picks(
    taken: torch.Tensor,
    deadline_rank: torch.Tensor,
    own: torch.Tensor,
    wanted: torch.Tensor,
    plan_rank: torch.Tensor,
    allowed: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """One-hots ``(n, K)`` of the rows ``srw`` and ``edf`` would pick at this turn (zeros where they idle).

    ``srw``: its own row if the plan still wants a node there, else the wanted row first in the plan's
    order. ``edf``: the allowed row with the fewest nodes this slot, then the earliest deadline, then the
    node's own row, then the lowest index (:class:`~mara_agents.heuristics.EDFScheduler`).
    :func:`~.numpy_actor.numpy_planner_picks` is the same for one observation in numpy.
    """
    k = taken.shape[-1]
    count = (deadline_rank > 0).sum(-1, keepdim=True).clamp(min=1)
    earlier = torch.round((1.0 - deadline_rank) * count)  # rows due strictly earlier, as the hint encodes it
    inf = torch.tensor(float("inf"))
    edf_key = torch.where(allowed, taken * 2 * (k + 1) + earlier * 2 + (1.0 - own), inf)
    candidates = allowed & (wanted > 0.5)
    srw_key = torch.where(candidates, (1.0 - own) * 2 + (1.0 - plan_rank), inf)
    return smallest_key_one_hot(srw_key, candidates), smallest_key_one_hot(edf_key, allowed)


def older_rows(rows: torch.Tensor) -> torch.Tensor:
    """``(n, K)``: per present row, the present rows that arrived strictly earlier (older), from the rows'
    ages; 0 for empty rows."""
    present = rows[..., PRESENT] > 0.5
    age = torch.where(present, rows[..., AGE], torch.tensor(float("-inf")))
    return (age[..., None, :] > age[..., :, None]).sum(-1).float() * present


def uniform_picks(taken: torch.Tensor, own: torch.Tensor, older: torch.Tensor, allowed: torch.Tensor) -> torch.Tensor:
    """One-hots ``(n, K)`` of the row ``uniform`` picks at this turn (zeros where nothing is allowed): the
    fewest nodes this slot, then the node's own row, then the oldest, then the lowest index
    (:class:`~mara_agents.heuristics.UniformScheduler`). ``older`` from :func:`older_rows`."""
    k = taken.shape[-1]
    key = torch.where(allowed, taken * 2 * (k + 1) + (1.0 - own) * (k + 1) + older, torch.tensor(float("inf")))
    return smallest_key_one_hot(key, allowed)
