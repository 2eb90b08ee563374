"""Cloning turns weighted by the planner rule their teacher's label followed.

A refit clones every turn alike, so a rule whose turns are few counts little. On big ``tabular``
clusters under overload the teacher (``edf_uniform``) plays ``edf`` while the tasks fit the table, and
every anchored action round so far lost most of those turns on the teacher's own episodes
(docs/mara_policy.md, "Where the overload deficit lies") while it kept the ``uniform`` ones. Weighing a
rule's turns up in the cloning loss asks the refit to keep them. The weights are relative: a turn of a
rule not named (or of a teacher that is no planner) weighs 1, and the loss is the weighted mean.

Tried once (docs/mara_policy.md, the sixty-fourth run: ``edf`` three times) it did not help; the accuracy
per rule that every fit now reports showed why: the refits already fit 99.5% of ``edf``'s own-data turns.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import torch

from mara_agents.mara.gate_paths import GATE_PATHS


def check_path_weights(path_weights: Mapping[str, float]) -> dict[str, float]:
    """``path_weights`` as a plain dict; ``ValueError`` naming a rule not in ``GATE_PATHS`` or a weight that
    is not a finite number > 0."""
    checked = {}
    for path, weight in path_weights.items():
        if path not in GATE_PATHS:
            raise ValueError(f"unknown rule {path!r} to weigh: allowed are {', '.join(GATE_PATHS)}")
        if isinstance(weight, bool) or not (isinstance(weight, (int, float)) and math.isfinite(weight) and weight > 0):
            raise ValueError(f"the weight of {path!r} turns must be a finite number > 0, got {weight!r}")
        checked[path] = float(weight)
    return checked


def turn_weights(paths: np.ndarray | None, path_weights: Mapping[str, float]) -> torch.Tensor | None:
    """Per turn, the weight of the rule its label followed (``paths``: indices into ``GATE_PATHS``, -1 for
    none; 1 where the rule is not named); ``None`` when nothing is weighed. ``ValueError`` when weights are
    asked of turns without recorded rules."""
    weights = check_path_weights(path_weights)
    if not weights:
        return None
    if paths is None:
        raise ValueError("weighing turns by rule needs demonstrations with paths (collect_demonstrations records them)")
    table = np.ones(len(GATE_PATHS) + 1, dtype=np.float32)  # the last entry serves path -1
    for path, weight in weights.items():
        table[GATE_PATHS.index(path)] = weight
    return torch.as_tensor(table[np.asarray(paths)])


def accuracy_by_path(correct: np.ndarray, paths: np.ndarray) -> dict[str, float]:
    """The share of ``correct`` turns among each rule's turns (``accuracy_srw`` and so on; rules without a
    turn are left out): where a refit keeps one rule's play and loses another's."""
    shares = {}
    for index, path in enumerate(GATE_PATHS):
        chosen = paths == index
        if chosen.any():
            shares[f"accuracy_{path}"] = float(correct[chosen].mean())
    return shares
