"""Copies of a trained slot actor given an input it was built without, weighed 0 so that the copy plays
and values exactly as the original until it is refitted (by DAgger, :mod:`~.action_dagger`, or PPO).

A network built with ``load_signal=True`` reads the arrival-rate global (``network.LOAD_GLOBALS``) in its
slot's context and in its critic. :func:`graft_load_signal` adds that input to a network trained without
it, so that a refit can learn to use the load without cloning anew. A network built with
``gate_context=True`` has a gate with a tanh layer that reads the arrival rate and ``log2 M`` beside the
slot token; :func:`graft_gate_context` gives one to a network whose gate is linear in the token.
:func:`graft_gate_rule` lets such a gate also read the path ``load_switch``'s rule names (``gate_rule``),
and :func:`rule_on_big_clusters` lets it read that path on big clusters only (``gate_rule_big``).
:func:`split_gate` gives big clusters a gate of their own, a copy of the gate (``split_gate``).
The original is never changed.
"""

from __future__ import annotations

import copy

import torch
from torch import nn
from torch.nn.utils import skip_init

from mara_agents.mara.context_features import RULE_INPUTS, slot_context
from mara_agents.mara.gate_paths import GATE_HIDDEN
from mara_agents.mara.network import LOAD_GLOBALS, global_index, global_names
from mara_agents.mara.slot_network import SlotMARANet

# the grafted gate carries the linear gate's logits through tanh at this fraction of their size, where
# tanh is nearly linear (logits up to 10, as a generalist's reach, lose at most 1.3%: on 22,596 slots of a
# refit's own play the path weights moved by at most 0.004), and scales them back up
GATE_GRAFT_SCALE = 0.02


def with_zero_columns(layer: nn.Linear, at: int, count: int) -> nn.Linear:
    """A copy of ``layer`` with ``count`` input columns of weight 0 inserted before input ``at``."""
    wider = nn.Linear(layer.in_features + count, layer.out_features)
    with torch.no_grad():
        weight = layer.weight
        zeros = torch.zeros(layer.out_features, count, dtype=weight.dtype)
        wider.weight.copy_(torch.cat([weight[:, :at], zeros, weight[:, at:]], dim=1))
        wider.bias.copy_(layer.bias)
    return wider


def graft_load_signal(net: SlotMARANet, scaled: bool = True) -> SlotMARANet:
    """A copy of ``net`` that reads the load signal (``load_signal=True``), its new weights 0; ``scaled``:
    the slot's context reads the rate scaled to about 1 (``load_scale``), which a refit can move enough.

    The signal joins the slot's context (after the other globals, before ``log2 M`` with the size
    context) and the critic's globals, as in a network built with the setting, so the copy saves and
    loads as one. ``ValueError`` for a network that reads it already or has a selector (not grafted).
    """
    if net.config["load_signal"] or net.selector is not None:
        raise ValueError("graft_load_signal needs a slot actor without the load signal and without a selector")
    count = len(LOAD_GLOBALS)
    grafted = copy.deepcopy(net)
    grafted.config["load_signal"] = True
    grafted.config["load_scale"] = scaled
    grafted.context_index = slot_context(load_signal=True)
    # the encoder's row embedding reads [row features, window summary, context (+ log2 M)]
    embed = net.encoder.embed[0]
    context_end = embed.in_features - int(net.config["size_context"])
    grafted.encoder.embed[0] = with_zero_columns(embed, context_end, count)
    old_globals = len(net.critic_globals)
    grafted.critic_globals = global_index(global_names(load_signal=True))
    critic_embed = net.critic_rows.embed[0]  # [row features, window summary, globals]
    grafted.critic_rows.embed[0] = with_zero_columns(critic_embed, critic_embed.in_features, count)
    value = net.value_head[0]  # [pooled rows (width), globals, mean node features]
    grafted.value_head[0] = with_zero_columns(value, net.config["width"] + old_globals, count)
    return grafted


def graft_gate_context(net: SlotMARANet, seed: int = 0) -> SlotMARANet:
    """A copy of ``net`` whose gate reads the arrival rate and ``log2 M`` beside the slot token through a
    tanh layer of :data:`~.gate_paths.GATE_HIDDEN` units (``gate_context=True``), first weighing the
    paths nearly as the original: its first units carry the linear gate's logits (scaled by
    :data:`GATE_GRAFT_SCALE`) and the output undoes the scale; the other units start at small weights
    drawn from ``seed`` with output weight 0, for a gate refit (:mod:`~.gate_dagger`) to use.

    Why: the labels of a teacher that follows the load on big clusters and one planner on small ones are
    not a linear function of what the gate reads, and a linear gate fitted to them agreed on 92% of big
    ``tabular`` slots where a one-layer gate reached 98% (docs/mara_policy.md, the sixty-first run).
    ``ValueError`` for a network without a gate (no planner hints), with a gate context already, or with
    a selector."""
    if net.hint_embed is None or net.gate_hidden is not None or net.selector is not None:
        raise ValueError("graft_gate_context needs a slot actor with planner hints, a linear gate and no selector")
    outputs, width = net.gate.out_features, net.gate.in_features
    grafted = copy.deepcopy(net)
    grafted.config["gate_context"] = True
    # built without their initial draw (it would use torch's global generator); every weight is set below
    hidden, gate = skip_init(nn.Linear, width + 2, GATE_HIDDEN), skip_init(nn.Linear, GATE_HIDDEN, outputs)
    generator = torch.Generator().manual_seed(seed)
    bound = 1.0 / (width + 2) ** 0.5  # nn.Linear's own initial range, drawn from the seed
    with torch.no_grad():
        hidden.weight.uniform_(-bound, bound, generator=generator)
        hidden.bias.zero_()
        hidden.weight[:outputs] = 0.0
        hidden.weight[:outputs, :width] = net.gate.weight * GATE_GRAFT_SCALE
        hidden.bias[:outputs] = net.gate.bias * GATE_GRAFT_SCALE
        gate.weight.zero_()
        gate.weight[:, :outputs] = torch.eye(outputs) / GATE_GRAFT_SCALE
        gate.bias.zero_()
    grafted.gate_hidden, grafted.gate = hidden, gate
    return grafted


def graft_gate_rule(net: SlotMARANet, seed: int = 0) -> SlotMARANet:
    """A copy of ``net`` whose gate also reads the path ``load_switch``'s rule names for each slot, one-hot
    (``gate_rule=True``, :func:`~.context_features.gate_rule_inputs`), its new weights 0, so it plays as
    ``net``. A linear gate first gets a tanh layer (:func:`graft_gate_context`, from ``seed``).

    Why: a gate set each slot to the rule's path levelled every big ``tabular`` cell that learned gates
    lost, and learned gates missed the rule on states they never saw (docs/mara_policy.md). Reading the
    rule's choice, a refitted gate has to learn only where to follow it. ``ValueError`` for a network
    without a gate (no planner hints), with the rule already, or with a selector."""
    if net.hint_embed is None or net.config["gate_rule"] or net.selector is not None:
        raise ValueError("graft_gate_rule needs a slot actor with planner hints, no gate_rule yet and no selector")
    grafted = graft_gate_context(net, seed) if net.gate_hidden is None else copy.deepcopy(net)
    grafted.config["gate_rule"] = True
    hidden = grafted.gate_hidden
    grafted.gate_hidden = with_zero_columns(hidden, hidden.in_features, RULE_INPUTS)
    return grafted


def rule_on_big_clusters(net: SlotMARANet) -> SlotMARANet:
    """A copy of a ``gate_rule`` network whose gate reads the rule's path only on clusters of at least
    ``RULE_MIN_NODES`` nodes (``gate_rule_big``), the same weights. A player fresh from
    :func:`graft_gate_rule` (the rule at weight 0) plays as before; refitted on big clusters, its gate
    cannot carry the rule's weights to small ones. ``ValueError`` for a network without the rule or with
    it limited already."""
    if not net.config.get("gate_rule") or net.config.get("gate_rule_big"):
        raise ValueError("rule_on_big_clusters needs a gate that reads the rule (gate_rule) on every cluster size")
    limited = copy.deepcopy(net)
    limited.config["gate_rule_big"] = True
    return limited


def split_gate(net: SlotMARANet) -> SlotMARANet:
    """A copy of a ``gate_context`` network whose clusters of at least ``RULE_MIN_NODES`` nodes read a gate
    of their own (``split_gate``), first a copy of the gate, so the copy plays as ``net``. Fitted alone
    (``gate_dagger.fit_gate(big_only=True)``), that gate cannot move small clusters' play. ``ValueError``
    for a network without a gate's tanh layer or with the split already."""
    if net.gate_hidden is None or net.config.get("split_gate"):
        raise ValueError("split_gate needs a gate with a tanh layer (gate_context) that is not split yet")
    split = copy.deepcopy(net)
    split.config["split_gate"] = True
    split.big_gate_hidden, split.big_gate = copy.deepcopy(net.gate_hidden), copy.deepcopy(net.gate)
    return split
