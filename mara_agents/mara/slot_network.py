"""A MARA actor that encodes a slot once and scores each node's turn with a light head.

Within a slot, only two things change between the turns of its nodes: how many earlier nodes chose
each row (``chosen_now``) and who is choosing. The joint actor of :class:`~.network.MARANet` runs its
whole transformer again at every turn. This actor splits the work:

- **slot encoding** (once per slot): every row becomes a token from its row and forecast features
  (``chosen_now`` excluded), a summary of its history window, and the slot's context (time, nodes up,
  live and queued tasks); a transformer mixes them with a learned slot token (never masked, so a slot
  with no task is well defined, and its output summarises the slot). The first layer of the turn
  head is applied to the row tokens here too, so a turn only adds to it.
- **turn head** (once per node): per row, the cached projection plus the turn's inputs (``chosen_now``,
  whether this node trained the row last slot, nodes that trained it last slot, and with planner hints
  the plan's nodes still wanted there) and the node's own features (speed, up, nodes still to decide),
  through ``tanh`` to a score; idle is scored from the slot token and the same node features. Logits
  are ``[idle, row 0, ..., row K-1]``.
- **planner hints** (``planner_hints=True``, :mod:`~.hints`): the ``srw`` plan and the deadline order
  of the slot, computed from the observation, join each row token after the encoder; two linear skip
  paths (one playing ``srw``'s rule, one ``edf``'s) are mixed by a per-slot gate read from the slot
  token, so the network can follow either planner, or a blend, where it serves the team best.
- **pick hints** (``pick_hints=True``): each skip path also reads a one-hot of the row its planner
  would pick at this very turn (:func:`planner_picks`). Without it, following ``edf`` means telling
  deadline ranks ``1/K`` apart, which a small network cannot do at 64 nodes and 128 rows (it agreed
  with an ``edf`` teacher on 20% of turns there, 87% at 4 nodes).

The autoregressive signal still reaches every decision (through ``chosen_now`` in the head), but a
turn costs a few small matrix products instead of a transformer pass. ``SlotMARAScheduler`` reuses
one slot's encoding across its nodes. Parameters do not depend on ``M`` or ``K_max``. The critic is
the same kind as :class:`~.network.MARANet`'s.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from mara_agents.mara.hints import HINT_FEATURES, planner_hints
from mara_agents.mara.network import RowEncoder, batch_layout, critic_value, make_critic, orthogonal, own_row
from mara_env.config import DEFAULTS
from mara_env.observation import GLOBAL_FEATURES, HEADER, NODE_FEATURES, ROW_FEATURES, layout_of

SLOT_CONTEXT = tuple(name for name in GLOBAL_FEATURES if name != "free_nodes")
_SLOT_CONTEXT_INDEX = [GLOBAL_FEATURES.index(name) for name in SLOT_CONTEXT]
_FREE_NODES = GLOBAL_FEATURES.index("free_nodes")
_CHOSEN_NOW = ROW_FEATURES.index("chosen_now")
_NODES_LAST_SLOT = ROW_FEATURES.index("nodes_last_slot")
_NODE_INPUTS = [NODE_FEATURES.index("speed"), NODE_FEATURES.index("up")]
_LAST_ACTION = NODE_FEATURES.index("last_action")
_NUM_NODES = HEADER.index("num_nodes")  # every vector's header says its M (padded batches mix clusters)
HINT_ROW_INPUTS = 3  # the plan wants a node here, ... and it is this node's own row, ... times the row's rank
EDF_ROW_INPUTS = 3  # nodes that chose the row this slot, its deadline rank, own row
TURN_ROW_INPUTS = 3 + HINT_ROW_INPUTS  # chosen_now, own row, nodes last slot, then the hint inputs (0 without hints)
TURN_NODE_INPUTS = len(_NODE_INPUTS) + 1  # speed, up, free nodes
IDLE_EXTRA_INPUTS = 2  # nodes chosen so far, whether the plan still wants any node
PICK_START = 5.0  # the pick hints' starting weight in each skip path: the planners' picks lead from the start


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
    :func:`numpy_planner_picks` is the same for one observation in numpy (inference).
    """
    k = taken.shape[-1]
    count = (deadline_rank > 0).sum(-1, keepdim=True).clamp(min=1)
    earlier = torch.round((1.0 - deadline_rank) * count)  # rows due strictly earlier, as the hint encodes it
    inf = torch.tensor(float("inf"))
    edf_key = torch.where(allowed, taken * 2 * (k + 1) + earlier * 2 + (1.0 - own), inf)
    candidates = allowed & (wanted > 0.5)
    srw_key = torch.where(candidates, (1.0 - own) * 2 + (1.0 - plan_rank), inf)
    picks = []
    for key, any_row in ((srw_key, candidates.any(-1, keepdim=True)), (edf_key, allowed.any(-1, keepdim=True))):
        one_hot = torch.zeros_like(taken).scatter_(-1, key.argmin(-1, keepdim=True), 1.0)
        picks.append(one_hot * any_row)
    return picks[0], picks[1]


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
    """:func:`planner_picks` for one observation's rows ``(K,)`` in numpy (``allowed`` boolean; ``earlier``
    from :func:`rows_due_earlier`, once per slot): the indices of the ``srw`` and ``edf`` picks, -1 where
    the planner idles (inference adds their weights to two scores instead of building one-hots)."""
    k = taken.size
    # the same lexicographic keys as planner_picks, smallest first
    edf_key = np.where(allowed, taken * (2 * (k + 1)) + earlier * 2 + (1.0 - own), np.inf)
    candidates = allowed & (wanted > 0.5)
    srw_key = np.where(candidates, (1.0 - own) * 2 + (1.0 - plan_rank), np.inf)
    edf = int(np.argmin(edf_key)) if allowed.any() else -1
    srw = int(np.argmin(srw_key)) if candidates.any() else -1
    return srw, edf


@dataclass
class SlotEncoding:
    """What a slot's turns share: per-row head projections, the pooled slot, and the present rows."""

    projected: torch.Tensor  # (n, K, width): first head layer applied to the row tokens
    pooled: torch.Tensor  # (n, width): the slot token's output
    plan_nodes: torch.Tensor  # (n, K): the planner's nodes per row this slot (zeros without hints)
    plan_rank: torch.Tensor  # (n, K): 1 for the plan's first row down to 0 (zeros without hints)
    deadline_rank: torch.Tensor  # (n, K): 1 for the earliest deadline down to 0 (zeros without hints)
    gate: torch.Tensor  # (n, 1): weight of the srw path against the edf path (0 without hints)

    @property
    def projected_np(self) -> np.ndarray:
        """The first observation's projections as numpy ``(K, width)`` (inference)."""
        return self.projected[0].detach().numpy()

    @property
    def pooled_np(self) -> np.ndarray:
        return self.pooled[0].detach().numpy()

    @property
    def hints_np(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
        """The first observation's plan nodes, plan rank, deadline rank and gate, in numpy."""
        parts = (self.plan_nodes, self.plan_rank, self.deadline_rank)
        return (*(part[0].detach().numpy() for part in parts), float(self.gate[0, 0]))


class SlotMARANet(nn.Module):
    """Actor that encodes a slot once, with a per-turn pointer head; critic over the global state.

    Parameters
    ----------
    history_window:
        ``H`` of the env the net reads.
    width, layers, heads:
        Transformer size of the slot encoder.
    autoregressive:
        Let the head see ``chosen_now``; ``False`` is the non-autoregressive ablation.
    planner_hints:
        Give every row the ``srw`` plan of its slot (:mod:`~.hints`; needs forecast features).
    pick_hints:
        Give each skip path the row its planner picks at this turn (:func:`planner_picks`; needs
        ``planner_hints``).
    """

    architecture = "slot"

    def __init__(
        self,
        history_window: int = DEFAULTS.history_window,
        width: int = 64,
        layers: int = 2,
        heads: int = 4,
        autoregressive: bool = True,
        planner_hints: bool = False,
        pick_hints: bool = False,
    ) -> None:
        super().__init__()
        if pick_hints and not planner_hints:
            raise ValueError("pick_hints needs planner_hints=True (the picks follow the srw plan and deadline order)")
        self.config = {
            "architecture": self.architecture,
            "history_window": history_window,
            "width": width,
            "layers": layers,
            "heads": heads,
            "autoregressive": autoregressive,
            "planner_hints": planner_hints,
            "pick_hints": pick_hints,
        }
        self.encoder = RowEncoder(history_window, len(SLOT_CONTEXT), width, layers, heads)
        self.slot_token = nn.Parameter(torch.zeros(1, 1, width))
        self.row_hidden = orthogonal(nn.Linear(width, width))
        self.turn_hidden = orthogonal(nn.Linear(TURN_ROW_INPUTS + TURN_NODE_INPUTS, width, bias=False))
        self.row_score = orthogonal(nn.Linear(width, 1), gain=0.01)
        self.hint_embed = orthogonal(nn.Linear(len(HINT_FEATURES), width)) if planner_hints else None
        self.idle_hidden = orthogonal(nn.Linear(width + TURN_NODE_INPUTS + IDLE_EXTRA_INPUTS, width))
        self.idle_score = orthogonal(nn.Linear(width, 1), gain=0.01)
        # linear paths from the hint inputs to the scores (zero at start): following srw or edf is then
        # a linear function the warm start learns in a few hundred steps; a per-slot gate mixes the two
        # and the tanh path learns departures from both
        picks = int(pick_hints)
        self.row_skip = nn.Linear(HINT_ROW_INPUTS + picks, 1, bias=False)
        self.idle_skip = nn.Linear(1, 1, bias=False)
        self.edf_skip = nn.Linear(EDF_ROW_INPUTS + picks, 1, bias=False)
        self.edf_idle = nn.Parameter(torch.zeros(1))
        self.gate = nn.Linear(width, 1)
        for layer in (self.row_skip, self.idle_skip, self.edf_skip, self.gate):
            nn.init.zeros_(layer.weight)
        nn.init.zeros_(self.gate.bias)
        if pick_hints:
            with torch.no_grad():
                self.row_skip.weight[0, -1] = self.edf_skip.weight[0, -1] = PICK_START
        self.critic_rows, self.value_head = make_critic(history_window, width, heads)

    def start_at_rules(self) -> None:
        """Set the skip paths to hand-made rules, so the actor starts as a gated mix of srw and edf.

        The srw path scores a row the plan still wants 10, plus 5 if it is the node's own row, plus 3 x
        its plan rank, and idling -10 while the plan wants a node (the idle bias of 5 then makes idling
        the choice once the plan is filled); the edf path scores a row -10 per node already on it plus
        3 x its deadline rank plus 0.01 if it is the node's own row, and idling -100. With the gate at
        1 (0) the actor plays srw's (edf's) decisions whenever the tanh paths are off. Zero-initialised
        skip paths stay small under cloning (0.06-0.20 in the first generalist), so the gate never
        mattered; starting them at the rules leaves cloning and PPO to learn when to follow which.
        """
        if self.hint_embed is None:
            raise ValueError("start_at_rules needs the planner hints (a network built with planner_hints=True)")
        with torch.no_grad():
            self.idle_score.bias.fill_(5.0)
            self.row_skip.weight.copy_(torch.tensor([[10.0, 5.0, 3.0]]))
            self.idle_skip.weight.fill_(-10.0)
            self.edf_skip.weight.copy_(torch.tensor([[-10.0, 3.0, 0.01]]))
            self.edf_idle.fill_(-100.0)

    # ------------------------------------------------------------------ actor
    def encode(self, observation: torch.Tensor) -> SlotEncoding:
        """The slot's shared encoding from observation vectors (any node's, any turn of the slot)."""
        _, globals_, rows, windows = batch_layout(observation).split_observation(observation)
        rows = rows.clone()
        rows[..., _CHOSEN_NOW] = 0.0  # the only row feature that changes within a slot
        slot = self.slot_token.expand(observation.shape[0], -1, -1)
        tokens = self.encoder(rows, windows, globals_[:, _SLOT_CONTEXT_INDEX], extra_tokens=slot)
        row_tokens, pooled = tokens[:, 1:], tokens[:, 0]
        hints, gate = torch.zeros((*rows.shape[:2], len(HINT_FEATURES))), torch.zeros((rows.shape[0], 1))
        if self.hint_embed is not None:
            hints = torch.from_numpy(planner_hints(observation.detach().cpu().numpy())).to(rows.device)
            row_tokens, gate = row_tokens + self.hint_embed(hints), torch.sigmoid(self.gate(pooled))
        plan_nodes = torch.round(hints[..., 0] * observation[:, _NUM_NODES, None])  # plan share x M
        return SlotEncoding(self.row_hidden(row_tokens), pooled, plan_nodes, hints[..., 1], hints[..., 2], gate)

    def turn_logits(self, encoding: SlotEncoding, observation: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Masked logits ``(n, K_max + 1)`` of the nodes whose observations these are, given their slot."""
        layout = batch_layout(observation)
        node, globals_, rows, _ = layout.split_observation(observation)
        chosen = rows[..., _CHOSEN_NOW] if self.config["autoregressive"] else torch.zeros_like(rows[..., 0])
        own = own_row(node, layout.max_tasks)
        wanted = (encoding.plan_nodes - torch.round(chosen * observation[:, _NUM_NODES, None]) > 0.5).float()
        hint_rows = torch.stack([wanted, own * wanted, encoding.plan_rank * wanted], dim=-1)
        per_row = torch.cat([torch.stack([chosen, own, rows[..., _NODES_LAST_SLOT]], dim=-1), hint_rows], dim=-1)
        per_node = torch.cat([node[:, _NODE_INPUTS], globals_[:, _FREE_NODES, None]], dim=-1)
        inputs = torch.cat([per_row, per_node[:, None, :].expand(-1, layout.max_tasks, -1)], dim=-1)
        hidden = torch.tanh(encoding.projected + self.turn_hidden(inputs))
        scores = self.row_score(hidden).squeeze(-1)
        any_wanted = wanted.amax(-1, keepdim=True)
        idle_in = torch.cat([encoding.pooled, per_node, chosen.sum(-1, keepdim=True), any_wanted], dim=-1)
        idle = self.idle_score(torch.tanh(self.idle_hidden(idle_in)))
        if self.hint_embed is not None:  # the gated skip paths: srw's rule and edf's rule
            gate = encoding.gate
            taken = torch.round(chosen * observation[:, _NUM_NODES, None])
            edf_rows = torch.stack([taken, encoding.deadline_rank, own], dim=-1)
            if self.config["pick_hints"]:
                allowed = mask[:, 1:] > 0.5
                srw_pick, edf_pick = planner_picks(
                    taken, encoding.deadline_rank, own, wanted, encoding.plan_rank, allowed
                )
                hint_rows = torch.cat([hint_rows, srw_pick[..., None]], dim=-1)
                edf_rows = torch.cat([edf_rows, edf_pick[..., None]], dim=-1)
            scores = scores + gate * self.row_skip(hint_rows).squeeze(-1)
            scores = scores + (1.0 - gate) * self.edf_skip(edf_rows).squeeze(-1)
            idle = idle + gate * self.idle_skip(any_wanted) + (1.0 - gate) * self.edf_idle
        return torch.cat([idle, scores], dim=-1).masked_fill(mask < 0.5, float("-inf"))

    def logits(self, observation: torch.Tensor, mask: torch.Tensor, max_tasks: int | None = None) -> torch.Tensor:
        """Masked logits for a batch of observations (each encoded on its own; training uses this)."""
        return self.turn_logits(self.encode(observation), observation, mask)

    # ------------------------------------------------------------------ critic
    def value(self, state: torch.Tensor, num_nodes: int | None = None, max_tasks: int | None = None) -> torch.Tensor:
        """Value ``(n,)`` of a batch of ``state()`` vectors (layout from their header)."""
        return critic_value(self.critic_rows, self.value_head, state)


class NumpyTurnHead:
    """The turn head of a :class:`SlotMARANet` in numpy, for inference: the same function as
    :meth:`SlotMARANet.turn_logits` for one observation, without torch's per-call overhead (a turn is a
    few small products, where torch's dispatch would cost more than the arithmetic)."""

    def __init__(self, net: SlotMARANet) -> None:
        weight = net.turn_hidden.weight.detach().numpy()
        self.turn_rows, self.turn_node = weight[:, :TURN_ROW_INPUTS].T.copy(), weight[:, TURN_ROW_INPUTS:].T.copy()
        self.row_score = net.row_score.weight.detach().numpy()[0].copy()
        self.row_bias = float(net.row_score.bias.detach()[0])
        self.idle_weight = net.idle_hidden.weight.detach().numpy().T.copy()
        self.idle_bias = net.idle_hidden.bias.detach().numpy().copy()
        self.idle_score = net.idle_score.weight.detach().numpy()[0].copy()
        self.idle_score_bias = float(net.idle_score.bias.detach()[0])
        self.autoregressive = net.config["autoregressive"]
        self.hinted = net.hint_embed is not None
        self.picks = net.config["pick_hints"]
        self.row_skip = net.row_skip.weight.detach().numpy()[0].copy()
        self.idle_skip = float(net.idle_skip.weight.detach()[0, 0])
        self.edf_skip = net.edf_skip.weight.detach().numpy()[0].copy()
        self.edf_idle = float(net.edf_idle.detach()[0])
        self._width = net.config["width"]
        self._slot: tuple[SlotEncoding | None, tuple] = (None, ())

    def _slot_parts(self, encoding: SlotEncoding) -> tuple:
        """The slot's numpy parts, converted once per slot (every node's turn reads them): projected rows,
        the idle layer's pooled term, plan nodes, plan rank, deadline rank, gate and (with pick hints)
        the rows due earlier."""
        if self._slot[0] is not encoding:
            pooled_term = encoding.pooled_np @ self.idle_weight[: self._width] + self.idle_bias
            hints = encoding.hints_np
            earlier = rows_due_earlier(hints[2]) if self.picks else None
            self._slot = (encoding, (encoding.projected_np, pooled_term, *hints, earlier))
        return self._slot[1]

    def logits(self, encoding: SlotEncoding, vector: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Masked logits ``(K_max + 1,)`` of one observation vector, given its slot's encoding."""
        projected, pooled_term, plan_nodes, plan_rank, deadline_rank, gate, earlier = self._slot_parts(encoding)
        layout = layout_of(vector)
        k = layout.max_tasks
        node, globals_ = vector[layout.slices["node"]], vector[layout.slices["global"]]
        table = vector[layout.slices["table"]].reshape(k, layout.row_size)
        chosen = table[:, _CHOSEN_NOW] if self.autoregressive else np.zeros(k, dtype=np.float32)
        own = np.zeros(k, dtype=np.float32)
        last = int(round(float(node[_LAST_ACTION]) * k)) - 1
        if last >= 0:
            own[last] = 1.0
        per_node = np.array([*node[_NODE_INPUTS], globals_[_FREE_NODES]], dtype=np.float32)
        taken = np.round(chosen * layout.num_nodes)
        wanted = (plan_nodes - taken > 0.5).astype(np.float32)
        hint_rows = np.stack([wanted, own * wanted, plan_rank * wanted], axis=1)
        per_row = np.concatenate([np.stack([chosen, own, table[:, _NODES_LAST_SLOT]], axis=1), hint_rows], axis=1)
        hidden = projected + (per_row @ self.turn_rows + per_node @ self.turn_node)
        scores = np.tanh(hidden, out=hidden) @ self.row_score + self.row_bias
        any_wanted = float(wanted.max(initial=0.0))
        idle_in = np.concatenate([per_node, [chosen.sum(), any_wanted]]).astype(np.float32)
        idle = np.tanh(pooled_term + idle_in @ self.idle_weight[self._width :]) @ self.idle_score + self.idle_score_bias
        if self.hinted:
            edf_rows = np.stack([taken, deadline_rank, own], axis=1)
            srw_part, edf_part = self.row_skip[:HINT_ROW_INPUTS], self.edf_skip[:EDF_ROW_INPUTS]
            scores = scores + gate * (hint_rows @ srw_part) + (1.0 - gate) * (edf_rows @ edf_part)
            if self.picks:  # the picks' one-hots add their weights to one score each
                srw_pick, edf_pick = numpy_planner_picks(taken, earlier, own, wanted, plan_rank, mask[1:] > 0.5)
                if srw_pick >= 0:
                    scores[srw_pick] += gate * self.row_skip[HINT_ROW_INPUTS]
                if edf_pick >= 0:
                    scores[edf_pick] += (1.0 - gate) * self.edf_skip[EDF_ROW_INPUTS]
            idle += gate * self.idle_skip * any_wanted + (1.0 - gate) * self.edf_idle
        logits = np.concatenate([[idle], scores]).astype(np.float32)
        return np.where(mask > 0.5, logits, -np.inf)
