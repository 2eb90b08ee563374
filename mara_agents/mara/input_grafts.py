"""Copies of a trained slot actor given an input it was built without, weighed 0 so that the copy plays
and values exactly as the original until it is refitted (by DAgger, :mod:`~.action_dagger`, or PPO).

A network built with ``load_signal=True`` reads the arrival-rate global (``network.LOAD_GLOBALS``) in its
slot's context and in its critic. :func:`graft_load_signal` adds that input to a network trained without
it, so that a refit can learn to use the load without cloning anew. The original is never changed.
"""

from __future__ import annotations

import copy

import torch
from torch import nn

from mara_agents.mara.context_features import slot_context
from mara_agents.mara.network import LOAD_GLOBALS, global_index, global_names
from mara_agents.mara.slot_network import SlotMARANet


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
