"""Which node turns of a PPO rollout sample the policy, and which play its most likely action.

By default every node turn samples its action. At 64 nodes that plays far worse than the greedy policy
that ships: the shipped generalist completed 0.734 sampled against 0.802 greedy on 64-node ``rl``
validation episodes (``docs/mara_policy.md``), because one off-plan node in a slot breaks the plan the
others follow. So PPO learned from a game the shipped policy never plays, the more so the bigger the
cluster.

With ``PPOConfig.explore_nodes`` = ``n``, each node turn samples with probability ``min(1, n / M)``
(about ``n`` sampled turns per slot of an ``M``-node cluster) and the others play the most likely
allowed action. Only the sampled turns enter the actor's PPO loss (their log-probabilities are the
policy's own); every turn enters the value loss and the teacher's cross-entropy. GAE then estimates,
at a sampled turn, the advantage of that action followed by mostly greedy play: a step that improves
the greedy policy.
"""

from __future__ import annotations

import math

import numpy as np
import torch


def check_explore_nodes(explore_nodes: float | None) -> None:
    """``ValueError`` unless ``explore_nodes`` is ``None`` (every turn samples) or a finite number > 0."""
    if explore_nodes is None:
        return
    if isinstance(explore_nodes, bool) or not isinstance(explore_nodes, (int, float)):
        raise ValueError(f"explore_nodes must be a number > 0 or None, got {explore_nodes!r}")
    if not (math.isfinite(explore_nodes) and explore_nodes > 0):
        raise ValueError(
            f"explore_nodes must be a finite number > 0 (sampled turns per slot) or None, got {explore_nodes}"
        )


def explore_probability(explore_nodes: float | None, nodes: np.ndarray) -> np.ndarray:
    """Per env copy, the chance that its node turn samples: ``min(1, explore_nodes / M)``, or 1 for
    ``None``. ``nodes`` holds each copy's ``M``."""
    nodes = np.asarray(nodes, dtype=float)
    if explore_nodes is None:
        return np.ones_like(nodes)
    return np.minimum(1.0, explore_nodes / np.maximum(nodes, 1.0))


def explore_mask(explore_nodes: float | None, nodes: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Per env copy, whether its node turn samples (``True``) or plays the most likely action."""
    if explore_nodes is None:  # no draw: a run without the option keeps its random stream
        return np.ones(np.shape(nodes), dtype=bool)
    probability = explore_probability(explore_nodes, nodes)
    return rng.random(probability.shape) < probability


def choose_actions(dist: torch.distributions.Categorical, explored: np.ndarray) -> torch.Tensor:
    """A sample where ``explored``, else the most likely allowed action."""
    sampled = dist.sample()
    if explored.all():
        return sampled
    return torch.where(torch.as_tensor(explored), sampled, dist.probs.argmax(-1))


def masked_mean(values: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """The mean of ``values`` over the turns whose weight is 1 (0 when there are none)."""
    return (values * weights).sum() / weights.sum().clamp(min=1.0)


def actor_mean(values: torch.Tensor, explored: torch.Tensor | None) -> torch.Tensor:
    """The mean over every turn (``explored`` is ``None``: the option is off) or over the sampled ones."""
    return values.mean() if explored is None else masked_mean(values, explored)


def normalised_advantages(adv: torch.Tensor, explored: torch.Tensor | None) -> torch.Tensor:
    """Advantages scaled to mean 0 and standard deviation 1 over the turns the actor learns from."""
    if explored is None:
        return (adv - adv.mean()) / (adv.std() + 1e-8)
    chosen = adv[explored > 0]
    if chosen.numel() < 2:  # nothing to scale by: the masked loss ignores these turns anyway
        return adv - (chosen.mean() if chosen.numel() else 0.0)
    return (adv - chosen.mean()) / (chosen.std() + 1e-8)
