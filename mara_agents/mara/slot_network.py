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
  would pick at this very turn (:func:`~.planner_picks.planner_picks`). Without it, following ``edf`` means telling
  deadline ranks ``1/K`` apart, which a small network cannot do at 64 nodes and 128 rows (it agreed
  with an ``edf`` teacher on 20% of turns there, 87% at 4 nodes).
- **uniform pick** (``uniform_pick=True``): a third skip path plays ``uniform``'s rule (the fewest
  nodes this slot, then the node's own row, then the oldest task), and the gate becomes a softmax over
  the three paths. ``uniform`` is a teacher candidate and the best scheduler in several heavily
  loaded ``rl`` cells, but it breaks ``edf``'s ties by age where ``edf`` breaks them by deadline, so
  without its pick the student cannot tell its labels from ``edf``'s.
- **selector** (``selector=True``, with the uniform pick): a small network on the slot token, the
  slot's context and ``log2 M`` that chooses, per slot, between the learned gate and one planner's
  path alone (:data:`~.gate_paths.SELECTOR_OPTIONS`). It is fitted after training (:mod:`~.selector`), with the
  rest of the network frozen, to the option that completed most in each of many scenarios (a gate
  trained with the policy drifted back to the paths PPO preferred). On the shipped generalist it
  gained nothing held out, so no shipped checkpoint has one.
- **size context** (``size_context=True``): the slot's context also holds ``log2 M / 6``. Without it
  the encoder cannot tell a 4-node cluster from a 64-node one (every other feature is a share of
  ``M`` or ``K_max``), so a teacher whose choice depends on the size (a candidate only up to 16
  nodes, a corner on 2-16 nodes) teaches it a blend of two rules.
- **load signal** and **gate context** (``load_signal=True``, ``gate_context=True``): the slot's context
  and the critic read the observed arrival rate; the gate reads it and ``log2 M`` beside the slot
  token (:func:`~.context_features.gate_load_inputs`). A gate can also be refitted on the policy's own play
  (:mod:`~.gate_dagger`).

The autoregressive signal still reaches every decision (through ``chosen_now`` in the head), but a
turn costs a few small matrix products instead of a transformer pass. ``SlotMARAScheduler`` reuses
one slot's encoding across its nodes. Parameters do not depend on ``M`` or ``K_max``. The critic is
the same kind as :class:`~.network.MARANet`'s.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import torch
from torch import nn

from mara_agents.mara.context_features import (
    RULE_INPUTS,
    big_cluster,
    gate_load_inputs,
    gate_rule_inputs,
    scaled_load,
    size_feature,
    slot_context,
)
from mara_agents.mara.gate_paths import (
    GATE_HIDDEN,
    gate_logits,
    make_selector,
    select_paths,
    selector_inputs,
    stacked_paths,
)
from mara_agents.mara.hints import HINT_FEATURES, planner_hints
from mara_agents.mara.network import (
    CHOSEN_NOW,
    RowEncoder,
    batch_layout,
    critic_value,
    global_index,
    global_names,
    make_critic,
    orthogonal,
    own_row,
)
from mara_agents.mara.planner_picks import older_rows, planner_picks, uniform_picks
from mara_env.config import DEFAULTS
from mara_env.observation import GLOBAL_FEATURES, HEADER, NODE_FEATURES, ROW_FEATURES

FREE_NODES = GLOBAL_FEATURES.index("free_nodes")
NODES_LAST_SLOT = ROW_FEATURES.index("nodes_last_slot")
NODE_INPUTS = [NODE_FEATURES.index("speed"), NODE_FEATURES.index("up")]
NUM_NODES = HEADER.index("num_nodes")  # every vector's header says its M (padded batches mix clusters)
HINT_ROW_INPUTS = 3  # the plan wants a node here, ... and it is this node's own row, ... times the row's rank
EDF_ROW_INPUTS = 3  # nodes that chose the row this slot, its deadline rank, own row
TURN_ROW_INPUTS = 3 + HINT_ROW_INPUTS  # chosen_now, own row, nodes last slot, then the hint inputs (0 without hints)
TURN_NODE_INPUTS = len(NODE_INPUTS) + 1  # speed, up, free nodes
IDLE_EXTRA_INPUTS = 2  # nodes chosen so far, whether the plan still wants any node
PICK_START = 5.0  # the pick hints' starting weight in each skip path: the planners' picks lead from the start


@dataclass
class SlotEncoding:
    """What a slot's turns share: per-row head projections, the pooled slot, and the present rows."""

    projected: torch.Tensor  # (n, K, width): first head layer applied to the row tokens
    pooled: torch.Tensor  # (n, width): the slot token's output
    plan_nodes: torch.Tensor  # (n, K): the planner's nodes per row this slot (zeros without hints)
    plan_rank: torch.Tensor  # (n, K): 1 for the plan's first row down to 0 (zeros without hints)
    deadline_rank: torch.Tensor  # (n, K): 1 for the earliest deadline down to 0 (zeros without hints)
    gate: torch.Tensor  # (n, 1): weight of the srw path (0 without hints); the edf path has 1 - gate - uniform_gate
    uniform_gate: torch.Tensor  # (n, 1): weight of the uniform path (0 without the uniform pick)
    older: torch.Tensor  # (n, K): present rows older than each row (zeros without the uniform pick)


def path_weights(encoding: SlotEncoding) -> torch.Tensor:
    """``(n, 3)``: the gate's weights on the srw, edf and uniform skip paths (in ``GATE_PATHS`` order)."""
    return stacked_paths(encoding.gate, encoding.uniform_gate)


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
        Give each skip path the row its planner picks at this turn (:func:`~.planner_picks.planner_picks`; needs
        ``planner_hints``).
    uniform_pick:
        A third skip path on the row ``uniform`` picks (:func:`~.planner_picks.uniform_picks`), gated with the others
        by a softmax (needs ``pick_hints``).
    selector:
        A selector between the learned gate and each path alone (needs ``uniform_pick``; fitted by
        :mod:`~.selector`, built by :func:`~.gate_edits.add_selector`).
    size_context:
        The slot's context also holds ``log2 M`` (:func:`~.context_features.size_feature`).
    load_signal:
        The slot's context and the critic also read the ``arrival_rate`` global, a slow signal of the
        offered load (:func:`~.network.global_names`).
    load_scale:
        With ``load_signal``, the slot's context reads the rate scaled to about 1
        (:func:`~.context_features.scaled_load`; the critic reads it raw). A network grafted with the
        signal (:mod:`~.input_grafts`) has it.
    gate_context:
        The gate reads the arrival rate and ``log2 M`` directly beside the slot token, through a tanh
        layer (:func:`~.context_features.gate_load_inputs`; needs ``planner_hints``). A gate on the slot
        token alone learnt the load on the teacher's states and lost it on the policy's own; the direct input alone did
        not change that (cloning never needs it), refitting the gate on the policy's own play did
        (:mod:`~.gate_dagger`; docs/mara_policy.md, the fifty-fourth run).
    gate_rule:
        With ``gate_context``, the gate also reads the path ``load_switch``'s rule names for the slot,
        one-hot (:func:`~.context_features.gate_rule_inputs`). A gate set each slot to that path levelled
        every big ``tabular`` cell where learned gates lost, but the rule is wrong elsewhere; reading it, a
        refitted gate only has to learn where to follow it (:func:`~.input_grafts.graft_gate_rule`).
    gate_rule_big:
        With ``gate_rule``, the rule's path reaches the gate only on clusters of at least
        ``RULE_MIN_NODES`` nodes (zeros below; :func:`~.context_features.gate_rule_inputs`). The rule is
        taught on big ``tabular`` clusters; read on every size, the rule-gate step's refit cost small
        clusters about 0.3 points (docs/mara_policy.md, session 59; :func:`~.input_grafts.rule_on_big_clusters`).
    split_gate:
        With ``gate_context``, clusters of at least ``RULE_MIN_NODES`` nodes have a gate of their own
        (``big_gate_hidden`` and ``big_gate``, built as copies of the gate), reading the same inputs. A
        refit of the big clusters' gate alone (``gate_dagger.fit_gate(big_only=True)``) leaves small
        clusters' play exactly as it was: refits of the one shared gate on big clusters moved 8-node
        ``tabular`` by up to a point (docs/mara_policy.md, session 59; :func:`~.input_grafts.split_gate`).
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
        uniform_pick: bool = False,
        selector: bool = False,
        size_context: bool = False,
        load_signal: bool = False,
        gate_context: bool = False,
        load_scale: bool = False,
        gate_rule: bool = False,
        gate_rule_big: bool = False,
        split_gate: bool = False,
    ) -> None:
        super().__init__()
        if pick_hints and not planner_hints:
            raise ValueError("pick_hints needs planner_hints=True (the picks follow the srw plan and deadline order)")
        if uniform_pick and not pick_hints:
            raise ValueError("uniform_pick needs pick_hints=True (it is a third pick beside srw's and edf's)")
        if selector and not uniform_pick:
            raise ValueError("selector needs uniform_pick=True (it chooses between the learned gate and each path)")
        if load_scale and (not load_signal or selector):
            raise ValueError("load_scale needs load_signal=True and no selector (it scales the slot context's rate)")
        if gate_context and not planner_hints:
            raise ValueError("gate_context needs planner_hints=True (it feeds the gate of the planners' skip paths)")
        if gate_rule and not gate_context:
            raise ValueError("gate_rule needs gate_context=True (the rule's path joins the tanh layer's inputs)")
        if gate_rule_big and not gate_rule:
            raise ValueError("gate_rule_big needs gate_rule=True (it limits where the gate reads the rule's path)")
        if split_gate and not gate_context:
            raise ValueError("split_gate needs gate_context=True (the big clusters' gate copies the gate's tanh layer)")
        self.config = {
            "architecture": self.architecture,
            "history_window": history_window,
            "width": width,
            "layers": layers,
            "heads": heads,
            "autoregressive": autoregressive,
            "planner_hints": planner_hints,
            "pick_hints": pick_hints,
            "uniform_pick": uniform_pick,
            "selector": selector,
            "size_context": size_context,
            "load_signal": load_signal,
            "load_scale": load_scale,
            "gate_context": gate_context,
            "gate_rule": gate_rule,
            "gate_rule_big": gate_rule_big,
            "split_gate": split_gate,
        }
        self.context_index = slot_context(load_signal)
        self.encoder = RowEncoder(history_window, len(self.context_index) + int(size_context), width, layers, heads)
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
        # the gate's logits: srw's against edf's fixed 0 (a sigmoid), and with the uniform pick uniform's too;
        # with gate_context they come from a tanh layer over the slot token, the arrival rate and log2 M
        gate_reads = width + 2 + RULE_INPUTS * int(gate_rule)
        self.gate_hidden = nn.Linear(gate_reads, GATE_HIDDEN) if gate_context else None
        self.gate = nn.Linear(GATE_HIDDEN if gate_context else width, 1 + int(uniform_pick))
        for layer in (self.row_skip, self.idle_skip, self.edf_skip, self.gate):
            nn.init.zeros_(layer.weight)
        nn.init.zeros_(self.gate.bias)
        if split_gate:  # copies, drawing nothing: a fresh split plays as one gate
            self.big_gate_hidden, self.big_gate = copy.deepcopy(self.gate_hidden), copy.deepcopy(self.gate)
        if pick_hints:
            with torch.no_grad():
                self.row_skip.weight[0, -1] = self.edf_skip.weight[0, -1] = PICK_START
        if uniform_pick:
            self.uniform_skip = nn.Parameter(torch.full((1,), PICK_START))
            self.uniform_idle = nn.Parameter(torch.zeros(1))
        self.selector = make_selector(width, len(self.context_index)) if selector else None
        self.critic_globals = global_index(global_names(load_signal))
        self.critic_rows, self.value_head = make_critic(history_window, width, heads, len(self.critic_globals))

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
        rows[..., CHOSEN_NOW] = 0.0  # the only row feature that changes within a slot
        slot = self.slot_token.expand(observation.shape[0], -1, -1)
        context = globals_[:, self.context_index]
        if self.config["load_scale"]:
            context = scaled_load(context)
        if self.config["size_context"]:
            context = torch.cat([context, size_feature(observation[:, NUM_NODES])[:, None]], dim=-1)
        tokens = self.encoder(rows, windows, context, extra_tokens=slot)
        row_tokens, pooled = tokens[:, 1:], tokens[:, 0]
        hints, gate = torch.zeros((*rows.shape[:2], len(HINT_FEATURES))), torch.zeros((rows.shape[0], 1))
        uniform_gate, older = torch.zeros_like(gate), torch.zeros_like(rows[..., 0])
        if self.hint_embed is not None:
            hints = torch.from_numpy(planner_hints(observation.detach().cpu().numpy())).to(rows.device)
            row_tokens = row_tokens + self.hint_embed(hints)
            gate, uniform_gate = self._gates(pooled, globals_, observation[:, NUM_NODES], rows.shape[1])
        if self.selector is not None:
            inputs = selector_inputs(pooled, globals_[:, self.context_index], observation[:, NUM_NODES])
            gate, uniform_gate = select_paths(torch.softmax(self.selector(inputs), -1), gate, uniform_gate)
        if self.config["uniform_pick"]:
            older = older_rows(rows)
        plan_nodes = torch.round(hints[..., 0] * observation[:, NUM_NODES, None])  # plan share x M
        projected = self.row_hidden(row_tokens)
        return SlotEncoding(projected, pooled, plan_nodes, hints[..., 1], hints[..., 2], gate, uniform_gate, older)

    def _gates(
        self, pooled: torch.Tensor, globals_: torch.Tensor, num_nodes: torch.Tensor, max_tasks: int
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The srw and uniform paths' weights ``(n, 1)`` each; the edf path gets the rest."""
        if self.gate_hidden is not None:
            pooled = torch.cat([pooled, gate_load_inputs(globals_, num_nodes)], -1)
        if self.config["gate_rule"]:
            size = num_nodes if self.config["gate_rule_big"] else None
            pooled = torch.cat([pooled, gate_rule_inputs(globals_, max_tasks, size)], -1)
        return self.gate_weights(pooled, num_nodes)

    def gate_weights(
        self, inputs: torch.Tensor, num_nodes: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """:meth:`_gates` from what the gate reads ``(n, width)``: the slot token, and with ``gate_context``
        :func:`~.context_features.gate_load_inputs` after it ``(n, width + 2)``, and with ``gate_rule``
        :func:`~.context_features.gate_rule_inputs` last ``(n, width + 5)``. A ``split_gate`` needs each
        slot's cluster size ``num_nodes`` ``(n,)``: big clusters read the big clusters' gate."""
        logits = gate_logits(inputs, self.gate_hidden, self.gate)
        if self.config["split_gate"]:
            if num_nodes is None:
                raise ValueError("a split gate needs each slot's cluster size (num_nodes) to pick its gate")
            big = big_cluster(num_nodes)[:, None]
            logits = torch.where(big, gate_logits(inputs, self.big_gate_hidden, self.big_gate), logits)
        if not self.config["uniform_pick"]:
            return torch.sigmoid(logits), torch.zeros_like(logits)
        weights = torch.softmax(torch.cat([logits[:, :1], torch.zeros_like(logits[:, :1]), logits[:, 1:]], -1), -1)
        return weights[:, :1], weights[:, 2:]

    def turn_logits(self, encoding: SlotEncoding, observation: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Masked logits ``(n, K_max + 1)`` of the nodes whose observations these are, given their slot."""
        layout = batch_layout(observation)
        node, globals_, rows, _ = layout.split_observation(observation)
        chosen = rows[..., CHOSEN_NOW] if self.config["autoregressive"] else torch.zeros_like(rows[..., 0])
        own = own_row(node, layout.max_tasks)
        wanted = (encoding.plan_nodes - torch.round(chosen * observation[:, NUM_NODES, None]) > 0.5).float()
        hint_rows = torch.stack([wanted, own * wanted, encoding.plan_rank * wanted], dim=-1)
        per_row = torch.cat([torch.stack([chosen, own, rows[..., NODES_LAST_SLOT]], dim=-1), hint_rows], dim=-1)
        per_node = torch.cat([node[:, NODE_INPUTS], globals_[:, FREE_NODES, None]], dim=-1)
        inputs = torch.cat([per_row, per_node[:, None, :].expand(-1, layout.max_tasks, -1)], dim=-1)
        hidden = torch.tanh(encoding.projected + self.turn_hidden(inputs))
        scores = self.row_score(hidden).squeeze(-1)
        any_wanted = wanted.amax(-1, keepdim=True)
        idle_in = torch.cat([encoding.pooled, per_node, chosen.sum(-1, keepdim=True), any_wanted], dim=-1)
        idle = self.idle_score(torch.tanh(self.idle_hidden(idle_in)))
        if self.hint_embed is not None:  # the gated skip paths: srw's rule and edf's rule (and uniform's)
            gate, uniform_gate = encoding.gate, encoding.uniform_gate
            edf_gate = 1.0 - gate - uniform_gate
            taken = torch.round(chosen * observation[:, NUM_NODES, None])
            edf_rows = torch.stack([taken, encoding.deadline_rank, own], dim=-1)
            if self.config["pick_hints"]:
                allowed = mask[:, 1:] > 0.5
                srw_pick, edf_pick = planner_picks(
                    taken, encoding.deadline_rank, own, wanted, encoding.plan_rank, allowed
                )
                hint_rows = torch.cat([hint_rows, srw_pick[..., None]], dim=-1)
                edf_rows = torch.cat([edf_rows, edf_pick[..., None]], dim=-1)
            scores = scores + gate * self.row_skip(hint_rows).squeeze(-1)
            scores = scores + edf_gate * self.edf_skip(edf_rows).squeeze(-1)
            idle = idle + gate * self.idle_skip(any_wanted) + edf_gate * self.edf_idle
            if self.config["uniform_pick"]:
                uniform_pick = uniform_picks(taken, own, encoding.older, mask[:, 1:] > 0.5)
                scores = scores + uniform_gate * self.uniform_skip * uniform_pick
                idle = idle + uniform_gate * self.uniform_idle
        return torch.cat([idle, scores], dim=-1).masked_fill(mask < 0.5, float("-inf"))

    def logits(self, observation: torch.Tensor, mask: torch.Tensor, max_tasks: int | None = None) -> torch.Tensor:
        """Masked logits for a batch of observations (each encoded on its own; training uses this)."""
        return self.turn_logits(self.encode(observation), observation, mask)

    def logits_and_paths(self, observation: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """:meth:`logits` and the weights ``(n, 3)`` the gate gives the srw, edf and uniform paths."""
        encoding = self.encode(observation)
        return self.turn_logits(encoding, observation, mask), path_weights(encoding)

    # ------------------------------------------------------------------ critic
    def value(self, state: torch.Tensor, num_nodes: int | None = None, max_tasks: int | None = None) -> torch.Tensor:
        """Value ``(n,)`` of a batch of ``state()`` vectors (layout from their header)."""
        return critic_value(self.critic_rows, self.value_head, state, self.critic_globals)
