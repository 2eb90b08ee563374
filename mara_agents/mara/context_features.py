"""What a slot actor reads of the slot's globals beside its rows (:class:`~.slot_network.SlotMARANet`):
the context's positions, ``log2 M`` (``size_context``), the arrival rate scaled to about 1 where the
network reads it scaled (``load_scale``, ``gate_context``), and the path ``load_switch``'s rule names
(``gate_rule``). :mod:`~.numpy_actor` mirrors them."""

from __future__ import annotations

import numpy as np
import torch

from mara_agents.mara.network import BASE_GLOBALS, LOAD_GLOBALS, global_index, global_names
from mara_agents.mara.teacher_rules import LOAD_SWITCH_RATE
from mara_env.observation import GLOBAL_FEATURES

SLOT_CONTEXT = tuple(name for name in BASE_GLOBALS if name != "free_nodes")  # the slot's context without load_signal
SLOT_CONTEXT_INDEX = global_index(SLOT_CONTEXT)
ARRIVAL_RATE = GLOBAL_FEATURES.index("arrival_rate")
LIVE_TASKS, QUEUED_TASKS = GLOBAL_FEATURES.index("live_tasks"), GLOBAL_FEATURES.index("queued_tasks")
RULE_INPUTS = 3  # what a gate_rule gate reads beside gate_load_inputs: the rule's path, one-hot
RULE_MIN_NODES = 17  # the rule-gate step teaches clusters this big; a gate_rule_big gate reads the rule there only
GATE_RATE_SCALE = 20.0  # arrival_rate x 20: about 1 at the train load, 1.4 at heavy and 1.9 at extreme
GATE_RATE_CAP = 5.0  # the first slots' rate is a few arrivals over one slot: capped, so one burst cannot saturate


def slot_context(load_signal: bool = False) -> list[int]:
    """Positions of the globals in a slot's context: every global the network reads but ``free_nodes``."""
    return global_index(tuple(name for name in global_names(load_signal) if name != "free_nodes"))


def size_feature(num_nodes: torch.Tensor) -> torch.Tensor:
    """``log2 M / 6`` per vector: about 0..1 over the 2-64 nodes of training (the header's ``num_nodes``)."""
    return torch.log2(num_nodes.clamp(min=1.0)) / 6.0


def scaled_rate(rate: torch.Tensor) -> torch.Tensor:
    """The arrival rate as the network reads it where it reads it scaled: ``x GATE_RATE_SCALE``, capped."""
    return (rate * GATE_RATE_SCALE).clamp(max=GATE_RATE_CAP)


def scaled_load(context: torch.Tensor) -> torch.Tensor:
    """A slot's context (``load_signal``: the load globals last) with the arrival rate scaled as the gate
    context scales it (:func:`scaled_rate`): about 1 at the ``train`` load, where the raw rate (about
    0.05) would move a grafted weight too little to matter (``load_scale``)."""
    return torch.cat([context[:, : -len(LOAD_GLOBALS)], scaled_rate(context[:, -len(LOAD_GLOBALS) :])], dim=-1)


def gate_load_inputs(globals_: torch.Tensor, num_nodes: torch.Tensor) -> torch.Tensor:
    """``(n, 2)``: what a ``gate_context`` gate reads beside the slot token: the scaled arrival rate and
    ``log2 M / 6``. Both are set by the scenario, not by the policy's play, so they read the same on the
    teacher's states and on the student's own."""
    rate = scaled_rate(globals_[:, ARRIVAL_RATE])
    return torch.stack([rate, size_feature(num_nodes)], dim=-1)


def big_cluster(num_nodes):
    """Whether a cluster of ``num_nodes`` nodes (an int, or a torch or numpy array of them) is big: at least
    ``RULE_MIN_NODES``, where the rule-gate step teaches, a ``gate_rule_big`` gate reads the rule and a
    ``split_gate`` network reads its big clusters' gate."""
    return num_nodes >= RULE_MIN_NODES


def gate_rule_inputs(
    globals_: torch.Tensor | np.ndarray, max_tasks: int, num_nodes: torch.Tensor | float | None = None
) -> torch.Tensor | np.ndarray:
    """``(..., 3)``: the path ``load_switch``'s rule names for the slot (its ``slot_path``), one-hot in
    ``GATE_PATHS`` order: ``srw`` while the arrival rate is at most ``LOAD_SWITCH_RATE``, beyond it
    ``uniform`` once the tasks in the system (in the table and queued) outnumber the ``max_tasks`` rows
    (``edf_uniform``'s crowding at its default share) and ``edf`` before. A ``gate_rule`` gate reads it
    so that it only has to learn where to follow the rule, not the rule. With ``num_nodes`` (each slot's
    ``M``; a ``gate_rule_big`` gate), zeros on clusters of fewer than ``RULE_MIN_NODES`` nodes: what a
    refit learns of the rule on big clusters then cannot reach small ones through it. Torch or numpy,
    as given."""
    above = (globals_[..., ARRIVAL_RATE] > LOAD_SWITCH_RATE) * 1.0
    in_system = ((globals_[..., LIVE_TASKS] + globals_[..., QUEUED_TASKS]) * max_tasks).round()
    crowded = (in_system > max_tasks) * 1.0
    columns = [1.0 - above, above * (1.0 - crowded), above * crowded]
    if isinstance(globals_, torch.Tensor):
        rule = torch.stack(columns, -1)
        return rule if num_nodes is None else rule * big_cluster(num_nodes).to(rule.dtype)[..., None]
    rule = np.stack(columns, -1).astype(np.float32)
    return rule if num_nodes is None else rule * np.float32(big_cluster(np.asarray(num_nodes)))[..., None]
