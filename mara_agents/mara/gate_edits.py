"""Copies of a hinted generalist with its gate edited: held on one path, given a ``uniform`` path, or
given a selector (:mod:`~.selector` fits it); or with its skip paths scaled against the learned scores.
The original network is never changed."""

from __future__ import annotations

import copy
import math

import torch
from torch import nn

from mara_agents.mara.gate_paths import GATE_PATHS, PIN_LOGIT, make_selector
from mara_agents.mara.slot_network import PICK_START, SlotMARANet


def pin_gate(net: SlotMARANet, path: str) -> SlotMARANet:
    """A copy of ``net`` whose gate gives ``path`` (one of ``GATE_PATHS``) all the weight in every slot.

    Everything else is untouched, so playing the copy shows what the learned gate costs or gains
    against always following one planner's skip path. ``ValueError`` for a network without a gate
    (no planner hints), an unknown path, or ``uniform`` on a network without that path.
    """
    if net.hint_embed is None:
        raise ValueError("pin_gate needs a network with planner hints (it has no gate otherwise)")
    uniform = net.config["uniform_pick"]
    allowed = GATE_PATHS if uniform else GATE_PATHS[:2]
    if path not in allowed:
        raise ValueError(f"path must be one of {list(allowed)} for this network, got {path!r}")
    # the gate's logits are srw's (and uniform's) against edf's fixed 0
    logits = {"srw": [PIN_LOGIT, -PIN_LOGIT], "edf": [-PIN_LOGIT, -PIN_LOGIT], "uniform": [-PIN_LOGIT, PIN_LOGIT]}
    pinned = without_selector(net)  # a selector would override the pin
    with torch.no_grad():
        pinned.gate.weight.zero_()
        pinned.gate.bias.copy_(torch.tensor(logits[path][: 1 + int(uniform)]))
    return pinned


# each gated skip path's weights: those on the rows' scores and the one on idling
PATH_PARAMETERS = {
    "srw": ("row_skip.weight", "idle_skip.weight"),
    "edf": ("edf_skip.weight", "edf_idle"),
    "uniform": ("uniform_skip", "uniform_idle"),
}


def scale_paths(net: SlotMARANet, factor: float, paths: tuple[str, ...] | None = None) -> SlotMARANet:
    """A copy of ``net`` whose skip paths ``paths`` (default: every one it has) weigh ``factor`` times as
    much against the learned scores.

    A path's contribution to every logit is linear in its weights, so the copy's logits are the learned
    scores plus ``factor`` x each scaled path's gated term (the gate itself is unchanged). A large factor
    makes the policy play the planners its gate weighs; 0 leaves the learned scores alone. ``ValueError``
    for a network without skip paths (no planner hints), an unknown or absent path, or a negative or
    non-finite factor.
    """
    if not isinstance(net, SlotMARANet) or net.hint_embed is None:
        raise ValueError("scale_paths needs a slot actor with planner hints (it has no skip paths otherwise)")
    allowed = GATE_PATHS if net.config["uniform_pick"] else GATE_PATHS[:2]
    paths = allowed if paths is None else paths
    unknown = [path for path in paths if path not in allowed]
    if unknown or not paths:
        raise ValueError(f"paths must be one or more of {list(allowed)} for this network, got {list(paths)}")
    if not (math.isfinite(factor) and factor >= 0.0):
        raise ValueError(f"factor must be a finite number >= 0, got {factor}")
    scaled = copy.deepcopy(net)
    parameters = dict(scaled.named_parameters())
    with torch.no_grad():
        for path in set(paths):
            for name in PATH_PARAMETERS[path]:
                parameters[name].mul_(factor)
    return scaled


def graft_uniform_path(net: SlotMARANet) -> SlotMARANet:
    """A copy of ``net`` (pick hints, no uniform path) with a uniform path added, weighed 0 by its gate.

    The copy plays as ``net`` does (the new path's logit is ``-PIN_LOGIT``), and pinned on ``uniform``
    it plays ``uniform``'s rule (the pick's weight starts at ``PICK_START``, as in a new network).
    ``ValueError`` for a network without pick hints or one that has the path already.
    """
    if not net.config["pick_hints"] or net.config["uniform_pick"]:
        raise ValueError("graft_uniform_path needs a network with pick hints and no uniform path yet")
    grafted = copy.deepcopy(net)
    grafted.config["uniform_pick"] = True
    grafted.uniform_skip = nn.Parameter(torch.full((1,), PICK_START))
    grafted.uniform_idle = nn.Parameter(torch.zeros(1))
    gate = nn.Linear(net.gate.in_features, 2)
    with torch.no_grad():
        gate.weight.copy_(torch.cat([net.gate.weight, torch.zeros_like(net.gate.weight)]))
        gate.bias.copy_(torch.cat([net.gate.bias, torch.tensor([-PIN_LOGIT])]))
    grafted.gate = gate
    return grafted


def add_selector(net: SlotMARANet) -> SlotMARANet:
    """A copy of ``net`` with a :data:`SELECTOR_OPTIONS` selector that picks the learned gate (so it plays
    as ``net``); a uniform path is grafted first where ``net`` lacks one. ``ValueError`` for a network
    without pick hints or with a selector already."""
    if net.selector is not None:
        raise ValueError("this network has a selector already")
    chosen = copy.deepcopy(net) if net.config["uniform_pick"] else graft_uniform_path(net)
    chosen.config["selector"] = True
    chosen.selector = make_selector(net.config["width"], len(net.context_index))
    with torch.no_grad():
        chosen.selector[-1].bias[0] = PIN_LOGIT
    return chosen


def without_selector(net: SlotMARANet) -> SlotMARANet:
    """A copy of ``net`` playing its learned gate: any selector removed."""
    plain = copy.deepcopy(net)
    plain.selector, plain.config["selector"] = None, False
    return plain
