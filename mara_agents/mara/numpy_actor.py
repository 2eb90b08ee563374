"""The slot actor of :class:`~.slot_network.SlotMARANet` in numpy, for inference.

A decision at 8 nodes is a few small products over a few dozen rows. In torch, the per-call
dispatch and the sanity checks of ``nn.TransformerEncoderLayer`` cost more than the arithmetic (about
1.2 ms to encode one slot, of which the attention kernels take 0.2). These classes compute the same
functions from the same weights with plain numpy:

- :class:`NumpySlotEncoder`: a slot's shared parts from one observation vector. Only the present rows
  go through the transformer: empty rows take no part in attention there, so leaving them out changes
  no present row's token (their actions are masked, so nothing reads them).
- :class:`NumpyTurnHead`: one node's logits, given its slot's parts.

Training keeps the torch modules (batched, with gradients); tests check that both give the same
logits. The transformer layers are the post-norm, ReLU kind that :class:`~.network.RowEncoder` builds.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from torch import nn

from mara_agents.mara.context_features import (
    ARRIVAL_RATE,
    GATE_RATE_CAP,
    GATE_RATE_SCALE,
    SLOT_CONTEXT_INDEX,
    big_cluster,
    gate_rule_inputs,
)
from mara_agents.mara.hints import HINT_FEATURES, planner_hints
from mara_agents.mara.network import CHOSEN_NOW, LAST_ACTION, LOAD_GLOBALS, PRESENT
from mara_agents.mara.planner_picks import AGE
from mara_agents.mara.slot_network import (
    EDF_ROW_INPUTS,
    FREE_NODES,
    HINT_ROW_INPUTS,
    NODE_INPUTS,
    NODES_LAST_SLOT,
    TURN_ROW_INPUTS,
    SlotEncoding,
    SlotMARANet,
)
from mara_agents.srw import SRWScheduler
from mara_env.observation import ObservationLayout, layout_of

LOAD_COUNT = len(LOAD_GLOBALS)  # the load globals close a load_signal network's slot context


def rows_due_earlier(deadline_rank: np.ndarray) -> np.ndarray:
    """Per row, the present rows due strictly earlier, recovered from the deadline-rank hint (per slot)."""
    return np.round((1.0 - deadline_rank) * max(int(np.count_nonzero(deadline_rank)), 1))


def numpy_planner_picks(
    taken: np.ndarray,
    earlier: np.ndarray,
    own: np.ndarray,
    wanted: np.ndarray,
    plan_rank: np.ndarray,
    allowed: np.ndarray,
) -> tuple[int, int]:
    """:func:`~.planner_picks.planner_picks` for one observation's rows ``(K,)`` in numpy (``allowed``
    boolean; ``earlier`` from :func:`rows_due_earlier`, once per slot): the indices of the ``srw`` and
    ``edf`` picks, -1 where the planner idles. The readable form: :class:`NumpyTurnHead` computes the
    same keys on the allowed rows with their per-slot parts precomputed, and adds the picks' weights to
    two scores."""
    k = taken.size
    # the same lexicographic keys as planner_picks, smallest first
    edf_key = np.where(allowed, taken * (2 * (k + 1)) + earlier * 2 + (1.0 - own), np.inf)
    candidates = allowed & (wanted > 0.5)
    srw_key = np.where(candidates, (1.0 - own) * 2 + (1.0 - plan_rank), np.inf)
    edf = int(np.argmin(edf_key)) if allowed.any() else -1
    srw = int(np.argmin(srw_key)) if candidates.any() else -1
    return srw, edf


@dataclass
class SlotParts:
    """What the turns of one slot share, for one observation (numpy)."""

    projected: np.ndarray  # (K, width): the head's first layer applied to the row tokens (zeros for empty rows)
    pooled: np.ndarray  # (width,): the slot token's output
    plan_nodes: np.ndarray  # (K,): the srw plan's nodes per row (zeros without hints)
    plan_rank: np.ndarray  # (K,): 1 for the plan's first row down to 0 (zeros without hints)
    deadline_rank: np.ndarray  # (K,): 1 for the earliest deadline down to 0 (zeros without hints)
    gate: float  # weight of the srw path (0 without hints); the edf path has 1 - gate - uniform_gate
    uniform_gate: float = 0.0  # weight of the uniform path (0 without the uniform pick)
    older: np.ndarray | None = None  # (K,): present rows older than each row (the uniform pick's key)

    def __post_init__(self) -> None:
        self.earlier = rows_due_earlier(self.deadline_rank)  # what the edf pick reads, once per slot

    @classmethod
    def from_encoding(cls, encoding: SlotEncoding) -> SlotParts:
        """The first observation's parts of a torch :class:`SlotEncoding`."""
        parts = (encoding.projected, encoding.pooled, encoding.plan_nodes, encoding.plan_rank, encoding.deadline_rank)
        projected, pooled, *hints = (part[0].detach().numpy() for part in parts)
        gates = float(encoding.gate[0, 0]), float(encoding.uniform_gate[0, 0])
        return cls(projected, pooled, *hints, *gates, encoding.older[0].detach().numpy())


def slot_selector_inputs(
    pooled: np.ndarray, vector: np.ndarray, context_index: list[int] = SLOT_CONTEXT_INDEX
) -> np.ndarray:
    """:func:`~.gate_paths.selector_inputs` of one observation ``vector`` whose slot token is ``pooled``
    (the slot's context at ``context_index``: a network's ``context_index``)."""
    layout = layout_of(vector)
    _, globals_, _, _ = layout.split_observation(vector)
    extra = [*globals_[context_index], size_feature(layout.num_nodes)]
    return np.concatenate([pooled, np.asarray(extra, dtype=pooled.dtype)])


def size_feature(num_nodes: int) -> float:
    """:func:`~.context_features.size_feature` of one vector's ``M``."""
    return float(np.log2(max(num_nodes, 1)) / 6.0)


def scaled_rate(rate: np.ndarray | float) -> np.ndarray:
    """:func:`~.context_features.scaled_rate` in numpy."""
    return np.minimum(np.asarray(rate) * GATE_RATE_SCALE, GATE_RATE_CAP)


def gate_inputs(
    pooled: np.ndarray,
    globals_: np.ndarray,
    layout: ObservationLayout,
    gate_context: bool,
    gate_rule: bool = False,
    gate_rule_big: bool = False,
) -> np.ndarray:
    """What a slot's gate reads (:meth:`~.slot_network.SlotMARANet.gate_weights`): the slot token
    ``pooled``, with ``gate_context`` :func:`~.context_features.gate_load_inputs` of the slot's globals,
    and with ``gate_rule`` :func:`~.context_features.gate_rule_inputs` after them (with ``gate_rule_big``
    zeros on small clusters)."""
    if not gate_context:
        return pooled
    load = np.float32([scaled_rate(globals_[ARRIVAL_RATE]), size_feature(layout.num_nodes)])
    size = layout.num_nodes if gate_rule_big else None
    rule = gate_rule_inputs(globals_, layout.max_tasks, size) if gate_rule else np.zeros(0, dtype=np.float32)
    return np.concatenate([pooled, load, rule])


def _linear(layer: nn.Linear) -> tuple[np.ndarray, np.ndarray]:
    """A linear layer's transposed weight and bias, for ``x @ weight + bias``."""
    return layer.weight.detach().numpy().T.copy(), layer.bias.detach().numpy().copy()


def _layer_norm(x: np.ndarray, norm: tuple[np.ndarray, np.ndarray, float]) -> np.ndarray:
    weight, bias, eps = norm
    width = x.shape[-1]  # sum / width is what np.mean computes, without its Python-level wrapper
    centred = x - x.sum(axis=-1, keepdims=True) / width
    return centred / np.sqrt((centred * centred).sum(axis=-1, keepdims=True) / width + eps) * weight + bias


class _EncoderLayer:
    """One post-norm ``nn.TransformerEncoderLayer`` (ReLU, no dropout) on an unpadded ``(T, width)`` sequence."""

    def __init__(self, layer: nn.TransformerEncoderLayer) -> None:
        if layer.norm_first or layer.activation_relu_or_gelu != 1:
            raise ValueError("the numpy encoder computes post-norm ReLU layers only (the kind RowEncoder builds)")
        attention = layer.self_attn
        self.heads = attention.num_heads
        self.in_weight = attention.in_proj_weight.detach().numpy().T.copy()
        self.in_bias = attention.in_proj_bias.detach().numpy().copy()
        self.out = _linear(attention.out_proj)
        self.hidden, self.output = _linear(layer.linear1), _linear(layer.linear2)
        self.norms = [
            (n.weight.detach().numpy().copy(), n.bias.detach().numpy().copy(), n.eps)
            for n in (layer.norm1, layer.norm2)
        ]

    def __call__(self, x: np.ndarray) -> np.ndarray:
        length, width = x.shape
        per_head = width // self.heads
        qkv = x @ self.in_weight + self.in_bias
        q, k, v = qkv[:, :width], qkv[:, width : 2 * width], qkv[:, 2 * width :]
        q, k, v = (part.reshape(length, self.heads, per_head).transpose(1, 0, 2) for part in (q, k, v))
        scores = q @ k.transpose(0, 2, 1) * np.float32(per_head**-0.5)  # float32 throughout, as in torch
        weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
        weights /= weights.sum(axis=-1, keepdims=True)
        attended = (weights @ v).transpose(1, 0, 2).reshape(length, width)
        x = _layer_norm(x + attended @ self.out[0] + self.out[1], self.norms[0])
        feed = np.maximum(x @ self.hidden[0] + self.hidden[1], 0.0) @ self.output[0] + self.output[1]
        return _layer_norm(x + feed, self.norms[1])


class NumpySlotEncoder:
    """:meth:`SlotMARANet.encode` for one observation vector, in numpy: the slot's :class:`SlotParts`."""

    def __init__(self, net: SlotMARANet) -> None:
        encoder = net.encoder
        self.window = _linear(encoder.window[0])
        self.embed = _linear(encoder.embed[0])
        self.layers = [_EncoderLayer(layer) for layer in encoder.mixer.layers]
        self.slot_token = net.slot_token.detach().numpy()[0, 0].copy()
        self.row_hidden = _linear(net.row_hidden)
        self.hinted = net.hint_embed is not None
        if self.hinted:
            self.hint_embed, self.gate = _linear(net.hint_embed), _linear(net.gate)
            self.gate_hidden = None if net.gate_hidden is None else _linear(net.gate_hidden)
            self.gate_rule, self.gate_rule_big = net.config["gate_rule"], net.config["gate_rule_big"]
            self.big_gate = (_linear(net.big_gate_hidden), _linear(net.big_gate)) if net.config["split_gate"] else None
            self.planner = SRWScheduler()  # plans the hints of every slot
        self.uniform = net.config["uniform_pick"]
        self.size_context = net.config["size_context"]
        self.load_scale = net.config["load_scale"]
        self.context_index = net.context_index
        self.selector = None if net.selector is None else (_linear(net.selector[0]), _linear(net.selector[2]))
        self.width = net.config["width"]

    def __call__(self, vector: np.ndarray) -> SlotParts:
        layout = layout_of(vector)
        k = layout.max_tasks
        _, globals_, rows, windows = layout.split_observation(vector)
        present = np.flatnonzero(rows[:, PRESENT] > 0.5)
        rows = rows[present].copy()
        rows[:, CHOSEN_NOW] = 0.0  # the only row feature that changes within a slot
        summary = np.tanh(
            windows[present].reshape(present.size, self.window[0].shape[0]) @ self.window[0] + self.window[1]
        )
        context = globals_[self.context_index]
        if self.load_scale:  # as context_features.scaled_load
            context = np.append(context[:-LOAD_COUNT], scaled_rate(context[-LOAD_COUNT:])).astype(context.dtype)
        if self.size_context:
            context = np.append(context, np.float32(size_feature(layout.num_nodes)))
        context = np.broadcast_to(context, (present.size, context.size))
        tokens = np.tanh(np.concatenate([rows, summary, context], axis=1) @ self.embed[0] + self.embed[1])
        tokens = np.concatenate([self.slot_token[None], tokens], axis=0)
        for layer in self.layers:
            tokens = layer(tokens)
        row_tokens, pooled = tokens[1:], tokens[0]
        hints, gates = np.zeros((k, len(HINT_FEATURES)), dtype=np.float32), (0.0, 0.0)
        if self.hinted:
            hints = planner_hints(vector[None], self.planner)[0]
            row_tokens = row_tokens + hints[present] @ self.hint_embed[0] + self.hint_embed[1]
            gates = self._gates(pooled, globals_, layout)
        if self.selector is not None:
            gates = self._select(gates, slot_selector_inputs(pooled, vector, self.context_index))
        projected = np.zeros((k, self.width), dtype=np.float32)
        projected[present] = row_tokens @ self.row_hidden[0] + self.row_hidden[1]
        plan_nodes = np.round(hints[:, 0] * layout.num_nodes)
        older = None
        if self.uniform:  # slot_network.older_rows, on the present rows
            age = rows[:, AGE]
            older = np.zeros(k, dtype=np.float32)
            older[present] = (age[None, :] > age[:, None]).sum(axis=1)
        return SlotParts(projected, pooled, plan_nodes, hints[:, 1].copy(), hints[:, 2].copy(), *gates, older)

    def _gates(self, pooled: np.ndarray, globals_: np.ndarray, layout: ObservationLayout) -> tuple[float, float]:
        """:meth:`SlotMARANet._gates`: the srw and uniform paths' weights."""
        inputs = gate_inputs(pooled, globals_, layout, self.gate_hidden is not None, self.gate_rule, self.gate_rule_big)
        hidden, gate = self.gate_hidden, self.gate
        if self.big_gate is not None and big_cluster(layout.num_nodes):  # a split gate: big clusters' own
            hidden, gate = self.big_gate
        if hidden is not None:
            inputs = np.tanh(inputs @ hidden[0] + hidden[1])
        logits = inputs @ gate[0] + gate[1]
        if not self.uniform:
            return float(1.0 / (1.0 + np.exp(-logits[0]))), 0.0
        weights = np.exp(np.array([logits[0], 0.0, logits[1]]) - max(float(logits.max()), 0.0))
        weights /= weights.sum()
        return float(weights[0]), float(weights[2])

    def _select(self, gates: tuple[float, float], inputs: np.ndarray) -> tuple[float, float]:
        """:func:`~.gate_paths.select_paths` of the selector's choice, for one slot."""
        (first, first_bias), (last, last_bias) = self.selector
        logits = np.tanh(inputs @ first + first_bias) @ last + last_bias
        choice = np.exp(logits - logits.max())
        choice /= choice.sum()
        return float(choice[0] * gates[0] + choice[1]), float(choice[0] * gates[1] + choice[3])


class NumpyTurnHead:
    """:meth:`SlotMARANet.turn_logits` for one observation in numpy, given its slot's :class:`SlotParts`
    (a turn is a few small products, where torch's dispatch would cost more than the arithmetic)."""

    def __init__(self, net: SlotMARANet) -> None:
        weight = net.turn_hidden.weight.detach().numpy()
        self.turn_rows, self.turn_node = weight[:, :TURN_ROW_INPUTS].T.copy(), weight[:, TURN_ROW_INPUTS:].T.copy()
        self.row_score = net.row_score.weight.detach().numpy()[0].copy()
        self.row_bias = float(net.row_score.bias.detach()[0])
        self.idle_weight, self.idle_bias = _linear(net.idle_hidden)
        self.idle_score = net.idle_score.weight.detach().numpy()[0].copy()
        self.idle_score_bias = float(net.idle_score.bias.detach()[0])
        self.autoregressive = net.config["autoregressive"]
        self.hinted = net.hint_embed is not None
        self.picks = net.config["pick_hints"]
        self.row_skip = net.row_skip.weight.detach().numpy()[0].copy()
        self.idle_skip = float(net.idle_skip.weight.detach()[0, 0])
        self.edf_skip = net.edf_skip.weight.detach().numpy()[0].copy()
        self.edf_idle = float(net.edf_idle.detach()[0])
        self.uniform = net.config["uniform_pick"]
        self.uniform_skip = float(net.uniform_skip.detach()[0]) if self.uniform else 0.0
        self.uniform_idle = float(net.uniform_idle.detach()[0]) if self.uniform else 0.0
        self._width = net.config["width"]
        self._pooled_term: tuple[SlotParts | None, np.ndarray] = (None, np.zeros(0))
        self._allowed: _AllowedRows | None = None

    def _idle_pooled_term(self, parts: SlotParts) -> np.ndarray:
        """The idle layer's slot-token term, once per slot (every node's turn reads it)."""
        if self._pooled_term[0] is not parts:
            term = parts.pooled @ self.idle_weight[: self._width] + self.idle_bias
            self._pooled_term = (parts, term)
        return self._pooled_term[1]

    def logits(
        self, parts: SlotParts, vector: np.ndarray, mask: np.ndarray, layout: ObservationLayout | None = None
    ) -> np.ndarray:
        """Masked logits ``(K_max + 1,)`` of one observation vector, given its slot's parts (``layout``: the
        vector's, if the caller has read it already). Only allowed rows are scored: the rest are -inf."""
        layout = layout_of(vector) if layout is None else layout
        k = layout.max_tasks
        node, globals_ = vector[layout.slices["node"]], vector[layout.slices["global"]]
        chosen = vector[layout.slices["table"]][CHOSEN_NOW :: layout.row_size]
        if not self.autoregressive:
            chosen = np.zeros(k, dtype=np.float32)
        taken = np.round(chosen * layout.num_nodes)
        any_wanted = float((parts.plan_nodes - taken > 0.5).any())
        per_node = np.array([*node[NODE_INPUTS], globals_[FREE_NODES]], dtype=np.float32)
        logits = np.full(k + 1, -np.inf, dtype=np.float32)
        allowed = self._allowed_rows(parts, vector, mask, layout)
        if allowed.rows.size:
            last = int(round(float(node[LAST_ACTION]) * k)) - 1
            logits[allowed.rows + 1] = self._row_scores(allowed, chosen, taken, last, per_node, k)
        if mask[0] > 0.5:
            logits[0] = self._idle_score(parts, per_node, chosen, any_wanted)
        return logits

    def _allowed_rows(
        self, parts: SlotParts, vector: np.ndarray, mask: np.ndarray, layout: ObservationLayout
    ) -> _AllowedRows:
        """The slot's parts on the rows ``mask`` allows, cached while the slot and the mask stay the same."""
        key = mask.tobytes()
        cached = self._allowed
        if cached is None or cached.parts is not parts or cached.key != key:
            table = vector[layout.slices["table"]].reshape(layout.max_tasks, layout.row_size)
            cached = self._allowed = _AllowedRows.of(parts, key, np.flatnonzero(mask[1:] > 0.5), table, self)
        return cached

    def _row_scores(
        self, allowed: _AllowedRows, chosen: np.ndarray, taken: np.ndarray, last: int, per_node: np.ndarray, k: int
    ) -> np.ndarray:
        """Scores of the allowed rows (``last``: the row this node trained last slot, -1 for none)."""
        rows = allowed.rows
        features = allowed.features  # chosen, own, nodes last slot, then the hint rows, then the edf rows
        features[:, 0], taken_rows = chosen[rows], taken[rows]
        own = features[:, 1]
        own[:] = rows == last
        wanted = features[:, 3]
        np.greater(allowed.plan_nodes - taken_rows, 0.5, out=wanted)
        np.multiply(own, wanted, out=features[:, 4])
        np.multiply(allowed.plan_rank, wanted, out=features[:, 5])
        features[:, 6], features[:, 8] = taken_rows, own
        hidden = allowed.projected + (features[:, :TURN_ROW_INPUTS] @ self.turn_rows + per_node @ self.turn_node)
        scores = np.tanh(hidden, out=hidden) @ self.row_score + self.row_bias
        if not self.hinted:
            return scores
        scores = scores + features[:, 3:] @ allowed.skip
        if self.picks:  # the picks' one-hots add their weights to one score each
            # numpy_planner_picks' keys, with their per-slot parts precomputed (equal argmins)
            parts = allowed.parts
            edf_key = taken_rows * (2 * (k + 1)) + allowed.edf_base - own
            scores[int(edf_key.argmin())] += (1.0 - parts.gate - parts.uniform_gate) * self.edf_skip[EDF_ROW_INPUTS]
            if wanted.any():
                srw_key = np.where(wanted > 0.5, allowed.srw_base - 2.0 * own, np.inf)
                scores[int(srw_key.argmin())] += parts.gate * self.row_skip[HINT_ROW_INPUTS]
            if self.uniform:  # slot_network.uniform_picks' key
                uniform_key = taken_rows * (2 * (k + 1)) + allowed.uniform_base - (k + 1) * own
                scores[int(uniform_key.argmin())] += parts.uniform_gate * self.uniform_skip
        return scores

    def _idle_score(self, parts: SlotParts, per_node: np.ndarray, chosen: np.ndarray, any_wanted: float) -> float:
        idle_in = np.concatenate([per_node, [chosen.sum(), any_wanted]]).astype(np.float32)
        idle_hidden = self._idle_pooled_term(parts) + idle_in @ self.idle_weight[self._width :]
        idle = np.tanh(idle_hidden) @ self.idle_score + self.idle_score_bias
        if self.hinted:
            gate, uniform_gate = parts.gate, parts.uniform_gate
            idle += gate * self.idle_skip * any_wanted + (1.0 - gate - uniform_gate) * self.edf_idle
            idle += uniform_gate * self.uniform_idle
        return idle


@dataclass
class _AllowedRows:
    """What a slot's turns read of the rows a mask allows; fixed while the slot and the mask stay the same."""

    parts: SlotParts
    key: bytes  # the mask's bytes
    rows: np.ndarray  # the allowed rows' indices
    projected: np.ndarray  # (rows, width)
    plan_nodes: np.ndarray
    plan_rank: np.ndarray
    edf_base: np.ndarray  # the edf pick's key without its per-turn terms: rows due earlier x 2 + 1
    srw_base: np.ndarray  # the srw pick's key off the own row: 2 + (1 - plan rank)
    uniform_base: np.ndarray | None  # the uniform pick's key off the own row: (K + 1) + older rows (None: no pick)
    skip: np.ndarray  # (6,): the skip paths' weights on the hint rows (times gate) and the edf rows (edf's weight)
    features: np.ndarray  # (rows, 9): a turn's inputs; nodes last slot and deadline rank filled once

    @classmethod
    def of(cls, parts: SlotParts, key: bytes, rows: np.ndarray, table: np.ndarray, head: NumpyTurnHead):
        features = np.zeros((rows.size, TURN_ROW_INPUTS + EDF_ROW_INPUTS), dtype=np.float32)
        features[:, 2], features[:, 7] = table[rows, NODES_LAST_SLOT], parts.deadline_rank[rows]
        gate = parts.gate
        edf_gate = 1.0 - gate - parts.uniform_gate
        skip = np.concatenate(
            [gate * head.row_skip[:HINT_ROW_INPUTS], edf_gate * head.edf_skip[:EDF_ROW_INPUTS]]
        ).astype(np.float32)
        plan_rank = parts.plan_rank[rows]
        uniform_base = None if parts.older is None else (parts.plan_rank.size + 1) + parts.older[rows]
        bases = (parts.earlier[rows] * 2 + 1.0, 2.0 + (1.0 - plan_rank), uniform_base)
        return cls(parts, key, rows, parts.projected[rows], parts.plan_nodes[rows], plan_rank, *bases, skip, features)
