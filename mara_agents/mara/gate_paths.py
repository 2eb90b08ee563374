"""The slot actor's gate over its planner skip paths, as free functions on tensors.

:class:`~.slot_network.SlotMARANet` mixes three skip paths (one per planner in :data:`GATE_PATHS`)
with a per-slot gate. What the gate's weights mean, the loss that teaches them a planner, the gate's
own layers, and the selector that may override it per slot live here, apart from the network, so
the refits (:mod:`~.gate_dagger`, :mod:`~.gate_edits`, :mod:`~.selector`) and the training losses
(:mod:`~.imitation`, :mod:`~.ppo`) read them without the actor's construction.
"""

from __future__ import annotations

import torch
from torch import nn

from mara_agents.mara.context_features import SLOT_CONTEXT, size_feature

GATE_PATHS = ("srw", "edf", "uniform")  # the skip paths, in the order of stacked_paths
PIN_LOGIT = 30.0  # a pinned gate's logit margin: the other paths then weigh below 1e-13
SELECTOR_OPTIONS = ("learned", *GATE_PATHS)  # a selector's choices: the learned gate, or one path alone
SELECTOR_HIDDEN = 32
GATE_HIDDEN = 32  # the hidden width of a gate that reads the load (gate_context)


def stacked_paths(gate: torch.Tensor, uniform_gate: torch.Tensor) -> torch.Tensor:
    """``(n, 3)``: the srw path's weight ``gate``, edf's (the rest) and uniform's ``uniform_gate``."""
    return torch.cat([gate, 1.0 - gate - uniform_gate, uniform_gate], dim=-1)


def gate_loss(weights: torch.Tensor, paths: torch.Tensor, uniform_path: bool) -> torch.Tensor:
    """Mean cross-entropy of the gate's path ``weights`` ``(n, 3)`` against the planner each turn's
    teacher followed (``paths``: an index into the three, -1 for none); 0 when no turn has one.

    Turns labelled ``uniform`` count only on a network with that path (``uniform_path``); turns of a
    teacher that was not a planner (-1) never do.
    """
    labelled = (paths >= 0) & ((paths != GATE_PATHS.index("uniform")) | uniform_path)
    if not bool(labelled.any()):
        return weights.sum() * 0.0  # keeps the graph (and the device) of a real loss
    chosen = weights[labelled].gather(-1, paths[labelled][:, None]).squeeze(-1)
    return -torch.log(chosen.clamp(min=1e-6)).mean()


def gate_logits(inputs: torch.Tensor, hidden: nn.Linear | None, gate: nn.Linear) -> torch.Tensor:
    """One gate's logits: its tanh layer (a ``gate_context`` gate) and its linear output."""
    return gate(inputs if hidden is None else torch.tanh(hidden(inputs)))


def make_selector(width: int, context: int = len(SLOT_CONTEXT)) -> nn.Sequential:
    """The selector's layers: slot token, the ``context`` globals and ``log2 M`` to one logit per option
    (zero at start)."""
    head = nn.Linear(SELECTOR_HIDDEN, len(SELECTOR_OPTIONS))
    nn.init.zeros_(head.weight)
    nn.init.zeros_(head.bias)
    return nn.Sequential(nn.Linear(width + context + 1, SELECTOR_HIDDEN), nn.Tanh(), head)


def selector_inputs(pooled: torch.Tensor, context: torch.Tensor, num_nodes: torch.Tensor) -> torch.Tensor:
    """``(n, width + context + 1)``: what the selector reads of each slot."""
    return torch.cat([pooled, context, size_feature(num_nodes)[:, None]], dim=-1)


def select_paths(choice: torch.Tensor, gate: torch.Tensor, uniform_gate: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """The srw and uniform paths' weights once a selector's ``choice`` ``(n, 4)`` (a distribution over
    :data:`SELECTOR_OPTIONS`) mixes the learned ``gate`` and ``uniform_gate`` with each path alone."""
    learned = choice[:, :1]
    return learned * gate + choice[:, 1:2], learned * uniform_gate + choice[:, 3:4]


def logits_and_gate_loss(
    net: nn.Module, observation: torch.Tensor, mask: torch.Tensor, paths: torch.Tensor | None
) -> tuple[torch.Tensor, torch.Tensor]:
    """``net``'s masked logits and its :func:`gate_loss` against ``paths`` (a zero loss when ``paths`` is
    ``None``: the gate is not supervised, and any actor will do)."""
    if paths is None:
        return net.logits(observation, mask), torch.zeros(())
    logits, weights = net.logits_and_paths(observation, mask)
    return logits, gate_loss(weights, paths, net.config["uniform_pick"])
