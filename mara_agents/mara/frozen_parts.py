"""Parts of a slot actor that a refit may hold fixed, by name.

A slot actor's gate reads the slot token the encoder pools, and its turns read the encoder's row
tokens. A refit of the turns alone moves that token too, so a gate fitted before the refit then meets
other inputs (docs/mara_policy.md: after the gate graft's action round the gate led with ``srw`` far
more often on overloaded play). Holding the ``encoder`` (with the slot token) and the ``gate`` fixed lets
a refit move only the turn heads: the row and idle scores and the gated skip paths' weights.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from torch import nn

FROZEN_PARTS: dict[str, tuple[str, ...]] = {
    "encoder": ("encoder.", "slot_token"),  # everything the slot token and the row tokens come from
    # the skip paths' gate (and a grafted gate's hidden layer, and a split gate's big clusters' pair)
    "gate": ("gate.", "gate_hidden.", "big_gate.", "big_gate_hidden."),
}


def frozen_names(net: nn.Module, parts: Sequence[str]) -> list[str]:
    """The names of ``net``'s parameters in ``parts`` (keys of :data:`FROZEN_PARTS`); ``ValueError`` naming
    an unknown part, or a part ``net`` does not have."""
    names = [name for name, _ in net.named_parameters()]
    chosen = []
    for part in parts:
        if part not in FROZEN_PARTS:
            raise ValueError(f"unknown part to freeze {part!r}: allowed are {', '.join(FROZEN_PARTS)}")
        matched = [name for name in names if name.startswith(FROZEN_PARTS[part])]
        if not matched:
            raise ValueError(f"cannot freeze {part!r}: this network has no such parameters (is it a slot actor?)")
        chosen += matched
    return chosen


@contextmanager
def frozen(net: nn.Module, parts: Sequence[str]) -> Iterator[list[nn.Parameter]]:
    """Within the block, ``net``'s parameters in ``parts`` take no gradient; yields the others (what an
    optimiser should step). Each parameter's ``requires_grad`` is restored on leaving, error or not."""
    held = set(frozen_names(net, parts))
    before = {name: parameter.requires_grad for name, parameter in net.named_parameters()}
    try:
        for name, parameter in net.named_parameters():
            if name in held:
                parameter.requires_grad_(False)
        yield [parameter for name, parameter in net.named_parameters() if name not in held]
    finally:
        for name, parameter in net.named_parameters():
            parameter.requires_grad_(before[name])


def part_digest(net: nn.Module, part: str) -> str:
    """A short fingerprint of ``net``'s parameters in ``part``: equal exactly when their names and values
    are (gate labels keep the ``encoder``'s, so that a refit on them can tell whether the slot tokens they
    hold are what the network to refit reads)."""
    digest = hashlib.sha256()
    for name in frozen_names(net, [part]):
        digest.update(name.encode())
        digest.update(net.get_parameter(name).detach().cpu().contiguous().numpy().tobytes())
    return digest.hexdigest()[:16]
