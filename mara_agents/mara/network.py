"""The MARA actor-critic: tokens for task rows and the acting node, a transformer over tasks, pointer
logits over rows plus idle, and a centralised critic on the env's ``state()``.

Actor. Each table row becomes a token from its row and forecast features, a learned summary of its
history window, and the acting node's and the slot's features (so every token knows who is choosing
and when). A transformer encoder mixes the tokens (self-attention across tasks, with empty rows
masked out of attention). A learned idle token joins the sequence. One linear head scores every token:
the logits are ``[idle, row 0, ..., row K-1]``, matching ``Discrete(K_max + 1)``, and masked actions
get ``-inf``. Nothing depends on ``K_max`` or ``M`` in the parameters: the same weights run any table
size and any number of nodes. The autoregressive signal reaches the policy through ``chosen_now``
(how many earlier nodes picked each row this slot), a row feature.

Critic. The same kind of row encoder (its own weights) over the state's task table, mean-pooled over
present rows, with the slot's global features and the pooled node features, into an MLP value head.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from mara_env.observation import (
    FORECAST_FEATURES,
    GLOBAL_FEATURES,
    NODE_FEATURES,
    ROW_FEATURES,
    WINDOW_FEATURES,
    ObservationLayout,
    layout_of,
)

ROW_INPUTS = len(ROW_FEATURES) + len(FORECAST_FEATURES)
PRESENT = ROW_FEATURES.index("present")
CHOSEN_NOW = ROW_FEATURES.index("chosen_now")
LAST_ACTION = NODE_FEATURES.index("last_action")
SPEED = NODE_FEATURES.index("speed")
# The globals every network reads. A global added later is read only by networks whose config asks for it,
# so a checkpoint trained before it existed keeps its input widths and loads.
BASE_GLOBALS = ("time", "free_nodes", "up_nodes", "live_tasks", "queued_tasks")
LOAD_GLOBALS = ("arrival_rate",)  # read with the ``load_signal`` setting


def global_names(load_signal: bool = False) -> tuple[str, ...]:
    """The globals a network reads, in observation order."""
    return BASE_GLOBALS + (LOAD_GLOBALS if load_signal else ())


def global_index(names: tuple[str, ...]) -> list[int]:
    """Positions of the global features ``names`` in the observation's (and state's) global block."""
    return [GLOBAL_FEATURES.index(name) for name in names]


def batch_layout(batch: torch.Tensor, state: bool = False) -> ObservationLayout:
    """The layout of a batch of observation (or state) vectors, read from the first one's header."""
    return layout_of(batch[0].detach().numpy(), state=state)


def orthogonal(layer: nn.Linear, gain: float = float(np.sqrt(2.0))) -> nn.Linear:
    """Orthogonal weights and zero bias (the PPO initialisation)."""
    nn.init.orthogonal_(layer.weight, gain)
    if layer.bias is not None:
        nn.init.zeros_(layer.bias)
    return layer


def own_row(node: torch.Tensor, max_tasks: int) -> torch.Tensor:
    """``(n, K)`` one-hot of the row this node trained last slot (all zeros if it idled).

    Rows carry no index of their own, so without this a node could not tell which task it would keep
    training at no switch cost.
    """
    last = torch.round(node[:, LAST_ACTION] * max_tasks).long() - 1
    return (torch.arange(max_tasks)[None, :] == last[:, None]).float()


class RowEncoder(nn.Module):
    """Row features + a window summary + context features -> one token per row, then self-attention."""

    def __init__(
        self, history_window: int, context: int, width: int, layers: int, heads: int, row_extra: int = 0
    ) -> None:
        super().__init__()
        window_inputs = history_window * len(WINDOW_FEATURES)
        self.window = nn.Sequential(orthogonal(nn.Linear(window_inputs, width)), nn.Tanh())
        self.embed = nn.Sequential(orthogonal(nn.Linear(ROW_INPUTS + row_extra + width + context, width)), nn.Tanh())
        block = nn.TransformerEncoderLayer(width, heads, dim_feedforward=2 * width, dropout=0.0, batch_first=True)
        self.mixer = nn.TransformerEncoder(block, layers, enable_nested_tensor=False)

    def forward(self, rows, windows, context, extra_tokens: torch.Tensor | None = None):
        n, k, _ = rows.shape
        summary = self.window(windows.reshape(n, k, -1))
        tokens = self.embed(torch.cat([rows, summary, context[:, None, :].expand(n, k, -1)], dim=-1))
        padding = rows[..., PRESENT] < 0.5  # empty rows take no part in attention
        if extra_tokens is not None:
            tokens = torch.cat([extra_tokens, tokens], dim=1)
            keep = torch.zeros((n, extra_tokens.shape[1]), dtype=torch.bool)
            padding = torch.cat([keep, padding], dim=1)
        return self.mixer(tokens, src_key_padding_mask=padding)


class MARANet(nn.Module):
    """Actor over one node's observation and critic over the global state.

    Parameters
    ----------
    history_window:
        ``H`` of the env the net reads (the only size the parameters depend on).
    width, layers, heads:
        Transformer size.
    autoregressive:
        Let the actor see ``chosen_now`` (earlier nodes' choices this slot). ``False`` hides it: the
        non-autoregressive ablation, in which nodes choose as if simultaneously.
    """

    def __init__(
        self, history_window: int = 8, width: int = 64, layers: int = 2, heads: int = 4, autoregressive: bool = True
    ) -> None:
        super().__init__()
        self.config = {
            "history_window": history_window,
            "width": width,
            "layers": layers,
            "heads": heads,
            "autoregressive": autoregressive,
        }
        self.global_index = global_index(BASE_GLOBALS)
        context = len(NODE_FEATURES) + len(self.global_index)
        self.actor_rows = RowEncoder(history_window, context, width, layers, heads, row_extra=1)
        self.idle_token = nn.Parameter(torch.zeros(1, 1, width))
        self.pointer = orthogonal(nn.Linear(width, 1), gain=0.01)
        self.critic_rows, self.value_head = make_critic(history_window, width, heads, len(self.global_index))

    def logits(self, observation: torch.Tensor, mask: torch.Tensor, max_tasks: int | None = None) -> torch.Tensor:
        """Masked logits ``(n, K_max + 1)`` for a batch of observation vectors of one env size and masks.

        The layout comes from the vectors' header (``max_tasks`` is accepted for callers that pass it).
        """
        layout = batch_layout(observation)
        max_tasks = layout.max_tasks
        node, globals_, rows, windows = layout.split_observation(observation)
        context = torch.cat([node, globals_[:, self.global_index]], dim=-1)
        if not self.config["autoregressive"]:
            rows = rows.clone()
            rows[..., CHOSEN_NOW] = 0.0
        rows = torch.cat([rows, own_row(node, max_tasks)[..., None]], dim=-1)
        idle = self.idle_token.expand(observation.shape[0], -1, -1)
        tokens = self.actor_rows(rows, windows, context, extra_tokens=idle)
        scores = self.pointer(tokens).squeeze(-1)
        return scores.masked_fill(mask < 0.5, float("-inf"))

    def value(self, state: torch.Tensor, num_nodes: int | None = None, max_tasks: int | None = None) -> torch.Tensor:
        """Value ``(n,)`` of a batch of ``state()`` vectors of one env size (layout from their header)."""
        return critic_value(self.critic_rows, self.value_head, state, self.global_index)


def make_critic(history_window: int, width: int, heads: int, globals_read: int) -> tuple[RowEncoder, nn.Module]:
    """The centralised critic's row encoder (one attention layer) and value head, reading ``globals_read``
    global features."""
    rows = RowEncoder(history_window, globals_read, width, 1, heads)
    head = nn.Sequential(
        orthogonal(nn.Linear(width + globals_read + len(NODE_FEATURES), width)),
        nn.Tanh(),
        orthogonal(nn.Linear(width, 1), gain=1.0),
    )
    return rows, head


def critic_value(
    rows_encoder: RowEncoder, value_head: nn.Module, state: torch.Tensor, globals_read: list[int]
) -> torch.Tensor:
    """The centralised critic: row tokens of the state's table, mean-pooled over present rows, with the
    slot's global features at ``globals_read`` and the mean features of the cluster's nodes (padding
    nodes, speed 0, left out), through the value head."""
    globals_, nodes, rows, windows = batch_layout(state, state=True).split_state(state)
    globals_ = globals_[:, globals_read]
    tokens = rows_encoder(rows, windows, globals_)
    present = (rows[..., PRESENT] > 0.5).float()[..., None]
    pooled = (tokens * present).sum(1) / present.sum(1).clamp(min=1.0)
    real = (nodes[..., SPEED] > 0).float()[..., None]
    node_mean = (nodes * real).sum(1) / real.sum(1).clamp(min=1.0)
    return value_head(torch.cat([pooled, globals_, node_mean], dim=-1)).squeeze(-1)
