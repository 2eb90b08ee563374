"""One PPO rollout: every env copy plays ``rollout_turns`` node turns with the current policy, and the
turns come back as one flat batch with their GAE advantages and returns.

Each turn samples its action or plays the most likely allowed one (:mod:`.exploration`); the batch keeps
what the update needs (observations, masks, states, actions, log-probabilities, values) and what the
guidance reads (the teacher's labels and planner, each turn's scenario kind and cluster size).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import torch

from mara_agents.mara.advantages import RunningMeanStd, gae
from mara_agents.mara.exploration import choose_actions, explore_mask
from mara_agents.mara.row_buckets import padded_logits, rows_needed, trim_batch

if TYPE_CHECKING:  # names for the signatures only
    from mara_agents.mara.guidance import TeacherLead
    from mara_agents.mara.network import MARANet
    from mara_agents.mara.ppo import PPOConfig
    from mara_agents.mara.workers import RayWorkerPool, Turn, WorkerPool

MASKED = -1e9  # masked logits: finite, so entropies and ratios stay finite


def masked_logits(net: MARANet, obs: torch.Tensor, mask: torch.Tensor, max_tasks: int) -> torch.Tensor:
    """The actor's logits with masked actions at ``MASKED`` instead of ``-inf``."""
    return finite(net.logits(obs, mask, max_tasks))


def finite(logits: torch.Tensor) -> torch.Tensor:
    """Masked (``-inf``) logits set to ``MASKED``."""
    return torch.where(torch.isinf(logits), torch.full_like(logits, MASKED), logits)


def cut_values(net: MARANet, turns: list[Turn], m: int, k: int, returns_stats: RunningMeanStd) -> np.ndarray:
    """Per env copy, the critic's value of the state where its episode was just cut (a learner window,
    ``warmup.learner_window``), in return units; 0 for every other copy. Added to the cut turn's reward,
    it stands for the rest of the episode the copy did not play (GAE stops at the cut as at an end)."""
    values = np.zeros(len(turns))
    cut = [i for i, x in enumerate(turns) if x.cut_state is not None]
    if cut:
        with torch.no_grad():
            states = torch.as_tensor(np.stack([turns[i].cut_state for i in cut]))
            values[cut] = net.value(states, m, k).numpy() * returns_stats.std + returns_stats.mean
    return values


def collect_rollout(
    net: MARANet,
    pool: WorkerPool | RayWorkerPool,
    turns: list[Turn],
    config: PPOConfig,
    k: int,
    m: int,
    returns_stats: RunningMeanStd,
    rng: np.random.Generator,
    finished_rates: list[float],
    lead: TeacherLead | None,
) -> tuple[dict[str, np.ndarray], list[Turn]]:
    """Collect ``rollout_turns`` turns from every env copy with the current policy; every episode that
    ends is recorded in ``finished_rates`` and, where a best teacher played it too, in ``lead`` (if any)."""
    t_len, e = config.rollout_turns, config.num_envs
    obs = np.zeros((t_len, e, turns[0].observation.size), dtype=np.float32)
    masks = np.zeros((t_len, e, k + 1), dtype=np.float32)
    states = np.zeros((t_len, e, turns[0].state.size), dtype=np.float32)
    actions = np.zeros((t_len, e), dtype=np.int64)
    labels = np.zeros((t_len, e), dtype=np.int64)
    paths = np.zeros((t_len, e), dtype=np.int64)
    kinds, nodes = np.zeros((t_len, e), dtype=np.int64), np.zeros((t_len, e), dtype=np.int64)
    explored = np.ones((t_len, e), dtype=bool)
    logprobs, values, rewards, dones = (np.zeros((t_len, e)) for _ in range(4))
    for t in range(t_len):
        obs[t] = np.stack([x.observation for x in turns])
        masks[t] = np.stack([x.mask for x in turns])
        states[t] = np.stack([x.state for x in turns])
        labels[t] = [x.label for x in turns]
        paths[t] = [x.path for x in turns]
        kinds[t], nodes[t] = [x.kind for x in turns], [x.nodes for x in turns]
        explored[t] = explore_mask(config.explore_nodes, nodes[t], rng)
        with torch.no_grad():
            step_obs, step_masks, step_states = (torch.as_tensor(a[t]) for a in (obs, masks, states))
            if config.row_buckets:  # the env copies' turns cut to the rows they use
                rows = int(rows_needed(obs[t], states[t]).max())
                step_obs, step_masks, step_states = trim_batch(step_obs, step_masks, step_states, rows)
            logits = padded_logits(masked_logits(net, step_obs, step_masks, k), k, MASKED)
            dist = torch.distributions.Categorical(logits=logits)
            action = choose_actions(dist, explored[t])
            logprobs[t] = dist.log_prob(action).numpy()
            values[t] = net.value(step_states, m, k).numpy() * returns_stats.std + returns_stats.mean
        actions[t] = action.numpy()
        turns = pool.step(actions[t])
        rewards[t] = [x.reward for x in turns]
        dones[t] = [x.done for x in turns]
        rewards[t] += config.gamma * cut_values(net, turns, m, k, returns_stats)  # cut episodes bootstrap
        for x in turns:
            if x.finished is not None:
                finished_rates.append(x.finished)
            if lead is not None and x.finished is not None and x.candidates_finished is not None:
                lead.record(x.finished_kind, x.candidates_finished, x.finished)
    with torch.no_grad():
        last_states = torch.as_tensor(np.stack([x.state for x in turns]))
        last_value = net.value(last_states, m, k).numpy() * returns_stats.std + returns_stats.mean
    advantages, returns = gae(rewards, values, dones, last_value, config.gamma, config.gae_lambda)
    returns_stats.update(returns.ravel())
    flat = lambda a: a.reshape(t_len * e, *a.shape[2:])  # noqa: E731
    batch = {
        "obs": flat(obs),
        "masks": flat(masks),
        "states": flat(states),
        "actions": flat(actions),
        "labels": flat(labels),
        "paths": flat(paths),
        "kinds": flat(kinds),
        "nodes": flat(nodes),
        "explored": flat(explored).astype(np.float32),
        "logprobs": flat(logprobs),
        "values": flat(values),
        "advantages": flat(advantages),
        "returns": flat(returns),
    }
    return batch, turns
