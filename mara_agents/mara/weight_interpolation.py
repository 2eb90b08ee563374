"""A network between two checkpoints of one architecture: every weight ``a + alpha (b - a)``.

Two refits of one network can be good in different corners: after the corner-taught gate an action
round brought big ``tabular`` at the ``train`` load back and lost its overload play
(docs/mara_policy.md, the sixty-third run). When ``b`` was refitted from ``a``, the networks on the line
between them often play well too, and a point on it can keep some of each (weight-space ensembling of
a network and its fine-tuned copy, as in WiSE-FT: Wortsman et al., 2022).
"""

from __future__ import annotations

import copy
import math

import torch

from mara_agents.mara.network import MARANet
from mara_agents.mara.slot_network import SlotMARANet


def interpolate(a: MARANet | SlotMARANet, b: MARANet | SlotMARANet, alpha: float) -> MARANet | SlotMARANet:
    """A new network with ``b``'s architecture and every floating-point weight ``a + alpha (b - a)``
    (``alpha`` 0 gives ``a``'s weights, 1 ``b``'s); ``ValueError`` unless both have one configuration and
    ``alpha`` is a finite number in [0, 1]."""
    if isinstance(alpha, bool) or not (isinstance(alpha, (int, float)) and math.isfinite(alpha) and 0 <= alpha <= 1):
        raise ValueError(f"alpha must be a number in [0, 1] (0: the first network, 1: the second), got {alpha!r}")
    if a.config != b.config:
        differ = sorted(key for key in a.config.keys() | b.config.keys() if a.config.get(key) != b.config.get(key))
        raise ValueError(f"the networks differ in {', '.join(differ)}: only one architecture can be interpolated")
    start, end = a.state_dict(), b.state_dict()
    mixed = copy.deepcopy(b)
    with torch.no_grad():
        mixed.load_state_dict(
            {
                name: start[name] + alpha * (value - start[name]) if value.is_floating_point() else value
                for name, value in end.items()
            }  # fmt: skip
        )
    return mixed
