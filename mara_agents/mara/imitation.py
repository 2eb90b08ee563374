"""Warm start for the MARA policy: behaviour cloning of a teacher, critic fitted to its returns.

:func:`collect_demonstrations` plays whole episodes with the teacher acting (in parallel processes)
and records, for every live node turn, the student's observation and mask, the global state, the
teacher's action and the return still to come (undiscounted, shaped as in training).
:func:`clone` then fits the actor by cross-entropy to the teacher's actions and the critic by
regression to the returns, so that PPO starts from a sensible policy *and* a critic that knows it.
"""

from __future__ import annotations

import multiprocessing as mp
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from tqdm.auto import tqdm

from mara_agents.mara.checkpoint import load_checkpoint
from mara_agents.mara.frozen_parts import frozen
from mara_agents.mara.gate_paths import logits_and_gate_loss
from mara_agents.mara.network import MARANet
from mara_agents.mara.packed_vectors import PackedVectors, joined
from mara_agents.mara.path_weighting import accuracy_by_path, turn_weights
from mara_agents.mara.row_buckets import rows_needed, size_buckets
from mara_agents.mara.scenarios import Padding, ScenarioSampler, scenario_settings
from mara_agents.mara.scheduler import MARAScheduler
from mara_agents.mara.teacher import Teacher
from mara_agents.mara.warmup import learner_window, play_warmup
from mara_agents.mara.workers import one_torch_thread
from mara_env.env import live_turns, raw_env


@dataclass
class Demonstrations:
    """Over node turns: ``obs`` and ``states`` (packed: only the rows each uses), arrays of ``masks``,
    ``actions`` (teacher), ``returns``, and ``paths``, the planner the teacher followed
    (``gate_paths.GATE_PATHS``; -1 or ``None``: none); ``completion_rates`` per episode."""

    obs: PackedVectors
    masks: np.ndarray
    states: PackedVectors
    actions: np.ndarray
    returns: np.ndarray
    completion_rates: np.ndarray
    paths: np.ndarray | None = None

    def __len__(self) -> int:
        return int(self.actions.size)

    @classmethod
    def concatenate(cls, parts: list[Demonstrations]) -> Demonstrations:
        """One set holding every part's turns, in order (the parts are left as they were)."""
        if len(parts) == 1:
            return parts[0]
        arrays = ("masks", "actions", "returns", "completion_rates", "paths")
        return cls(
            obs=PackedVectors.concatenate([part.obs for part in parts]),
            states=PackedVectors.concatenate([part.states for part in parts]),
            **{name: joined([getattr(part, name) for part in parts]) for name in arrays},
        )


def play_teacher_episode(
    env_kwargs: dict,
    teacher: str,
    seed: int,
    scenarios: ScenarioSampler | None = None,
    student: Path | None = None,
) -> tuple[np.ndarray, ...]:
    """One episode with ``teacher`` acting: per-turn arrays, the episode's completion rate and, per
    turn, the planner the teacher followed (:meth:`Teacher.path`).

    With ``student`` (a checkpoint) the student's policy plays instead and the teacher only labels its
    states (DAgger: :mod:`~.action_dagger`) once the warm-up slots, which a planner still plays, are over;
    rewards, returns and completion are then the student's.

    With ``scenarios`` the episode plays the scenario drawn from its seed, padded as in training; the
    turns of its warm-up slots (:meth:`ScenarioSampler.warmup_slots`) are played but not recorded, and
    so are those after a learner window's cut (``random_window``; :func:`~.warmup.learner_window`).
    """
    settings = scenario_settings(env_kwargs, scenarios, seed)
    padding = Padding.for_scenarios(scenarios)
    env = raw_env(**settings)
    guide = Teacher.for_env(teacher, settings)
    env.reset(seed=seed)
    guide.reset(seed)
    player = None if student is None else _student(student, seed)
    play_warmup(env, scenarios, settings, seed, guide)
    cut = learner_window(scenarios, settings, seed).cut
    obs, masks, states, actions, paths, rewards, recorded = [], [], [], [], [], [], []
    for agent in live_turns(env):
        observation = env.observe(agent)
        action = guide.action(env, observation)
        recorded.append(cut is None or env.sim.slot < cut)  # after a window's cut: played, not recorded
        if recorded[-1]:
            state = env.state()
            if padding is not None:
                observation, state = padding.observation(observation), padding.state(state)
            obs.append(observation["observation"])
            masks.append(observation["action_mask"])
            states.append(state)
            actions.append(action)
            paths.append(guide.path())  # per turn: a switching candidate's rule follows the state
        env.step(action if player is None else player.act(observation, agent))
        rewards.append(env.rewards[agent])
    # gamma = 1: the return still to come, to the episode's end (past a cut too: the critic learns it)
    returns = np.cumsum(np.asarray(rewards, dtype=np.float64)[::-1])[::-1][np.asarray(recorded, dtype=bool)]
    rate = env.sim.metrics()["completion_rate"]
    return np.stack(obs), np.stack(masks), np.stack(states), np.asarray(actions), returns, rate, np.asarray(paths)


def _student(checkpoint: Path, seed: int) -> MARAScheduler:
    net, trained_env, _ = load_checkpoint(checkpoint)
    player = MARAScheduler(net, trained_env=trained_env)
    player.reset(seed)
    return player


def _play(args: tuple) -> tuple:
    """One teacher episode with its observations and states packed (in the worker: the padded vectors
    never reach the parent)."""
    obs, masks, states, *rest = play_teacher_episode(*args)
    return (PackedVectors.pack(obs), masks, PackedVectors.pack(states, state=True), *rest)


def collect_demonstrations(
    env_kwargs: dict,
    teacher: str,
    seeds: list[int],
    processes: int = 2,
    progress: bool = True,
    scenarios: ScenarioSampler | None = None,
    student: Path | None = None,
) -> Demonstrations:
    """Teacher episodes on ``seeds`` (one per process task), concatenated in seed order; with ``student``
    (a checkpoint) its episodes, labelled by ``teacher`` (:func:`play_teacher_episode`)."""
    context = mp.get_context("fork") if "fork" in mp.get_all_start_methods() else mp.get_context()
    jobs = [(env_kwargs, teacher, seed, scenarios, student) for seed in seeds]
    with context.Pool(processes, initializer=one_torch_thread) as pool:
        episodes = list(tqdm(pool.imap(_play, jobs), total=len(jobs), desc=f"{teacher} demos", disable=not progress))
    parts = [list(field) for field in zip(*episodes)]
    del episodes  # the fields' lists now hold the only references, which joined() releases
    return Demonstrations(
        obs=PackedVectors.concatenate(parts[0]),
        masks=joined(parts[1], np.float32),
        states=PackedVectors.concatenate(parts[2]),
        actions=joined(parts[3], np.int64),
        returns=joined(parts[4], np.float64),
        completion_rates=np.asarray(parts[5]),
        paths=joined(parts[6], np.int64),
    )


def check_gate_supervision(net: MARANet, demos: Demonstrations | None, gate_coef: float) -> bool:
    """Whether to fit ``net``'s gate (``gate_coef`` > 0); ``ValueError`` if it is asked of a network
    without one (not a slot actor with planner hints) or of demonstrations without ``paths``."""
    if gate_coef < 0:
        raise ValueError(f"gate_coef must be >= 0 (0: the gate is not supervised), got {gate_coef}")
    if gate_coef == 0:
        return False
    if not hasattr(net, "logits_and_paths") or not net.config.get("planner_hints"):
        raise ValueError("gate_coef > 0 needs a slot actor with planner hints (it fits the gate of their skip paths)")
    if demos is not None and demos.paths is None:
        raise ValueError("gate_coef > 0 needs demonstrations with paths (collect_demonstrations records them)")
    return True


def clone(
    net: MARANet,
    demos: Demonstrations,
    num_nodes: int,
    max_tasks: int,
    epochs: int = 3,
    batch_size: int = 256,
    learning_rate: float = 1e-3,
    seed: int = 0,
    progress: bool = True,
    row_buckets: bool = False,
    gate_coef: float = 0.0,
    freeze: Sequence[str] = (),
    path_weights: Mapping[str, float] | None = None,
) -> dict:
    """Fit the actor to the teacher's actions and the critic to normalised returns.

    With ``gate_coef`` > 0 (a hinted slot actor and demonstrations with ``paths``) the gate is also fitted,
    by :func:`~.gate_paths.gate_loss` with that weight, to the planner each episode's teacher followed.

    With ``row_buckets`` each batch holds samples of similar table size, cut to the rows they use
    (:mod:`~mara_agents.mara.row_buckets`): much faster on mixed scenarios, the same loss per batch.

    ``freeze`` names parts held fixed (:data:`~.frozen_parts.FROZEN_PARTS`, such as ``("encoder", "gate")``).
    ``path_weights`` weighs each turn's cloning loss by the rule its label followed (``{"edf": 3.0}``;
    :mod:`~.path_weighting`); other turns weigh 1.

    Returns the final epoch's mean ``bc_loss``, ``gate_loss`` (0 unsupervised), ``bc_accuracy`` and
    ``value_loss``, the returns' ``return_mean`` / ``return_std`` (PPO starts its value normalisation from
    them) and, for demonstrations with ``paths``, the final epoch's accuracy on each rule's turns
    (``accuracy_srw``, ``accuracy_edf``, ``accuracy_uniform``).
    """
    weights = turn_weights(demos.paths, path_weights or {})
    with frozen(net, freeze) as trainable:
        return _fit(net, demos, trainable, (num_nodes, max_tasks), epochs, batch_size, learning_rate, seed, progress,
                    row_buckets, gate_coef, weights)  # fmt: skip


def _fit(
    net: MARANet,
    demos: Demonstrations,
    trainable: list[torch.nn.Parameter],
    sizes: tuple[int, int],
    epochs: int,
    batch_size: int,
    learning_rate: float,
    seed: int,
    progress: bool,
    row_buckets: bool,
    gate_coef: float,
    weights: torch.Tensor | None,
) -> dict:
    """:func:`clone`, stepping only ``trainable``; ``sizes`` is the critic's (M, K_max); ``weights`` per turn
    (``None``: all alike)."""
    num_nodes, max_tasks = sizes
    generator = torch.Generator().manual_seed(seed)
    optimiser = torch.optim.Adam(trainable, lr=learning_rate, eps=1e-5)
    mean, std = float(demos.returns.mean()), float(demos.returns.std() + 1e-8)
    supervise_gate = check_gate_supervision(net, demos, gate_coef)
    paths = torch.as_tensor(demos.paths) if supervise_gate else None
    masks, actions = torch.as_tensor(demos.masks), torch.as_tensor(demos.actions)
    targets = torch.as_tensor((demos.returns - mean) / std, dtype=torch.float32)
    steps = epochs * ((len(demos) + batch_size - 1) // batch_size)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimiser, lambda step: 1.0 - step / steps)
    bar = tqdm(total=steps, desc="behaviour cloning", disable=not progress)
    rows_used = rows_needed(demos.obs, demos.states) if row_buckets else None
    correct = np.zeros(len(demos), dtype=bool)  # per turn, in the latest epoch
    for _epoch in range(epochs):
        totals = np.zeros(4)
        if rows_used is None:
            batches = torch.randperm(len(demos), generator=generator).split(batch_size)
        else:
            batches = size_buckets(rows_used, batch_size, generator)
        for idx in batches:
            rows = None if rows_used is None else int(rows_used[idx].max())
            obs, states = demos.obs.batch(idx, rows), demos.states.batch(idx, rows)
            mask = masks[idx] if rows is None else masks[idx, : rows + 1]
            logits, gate = logits_and_gate_loss(net, obs, mask, None if paths is None else paths[idx])
            logits = logits.clamp(min=-1e9)  # masked logits stay finite
            bc_loss = cloning_loss(logits, actions[idx], None if weights is None else weights[idx])
            value_loss = 0.5 * ((net.value(states, num_nodes, max_tasks) - targets[idx]) ** 2).mean()
            optimiser.zero_grad()
            (bc_loss + value_loss + gate_coef * gate).backward()
            torch.nn.utils.clip_grad_norm_(trainable, 1.0)
            optimiser.step()
            schedule.step()
            hits = logits.argmax(-1) == actions[idx]
            correct[idx.numpy()] = hits.numpy()
            accuracy = float(hits.float().mean())
            totals += np.array([bc_loss.item(), accuracy, value_loss.item(), gate.item()]) * idx.numel()
            bar.update()
        bar.set_postfix(acc=f"{totals[1] / len(demos):.3f}")
    bar.close()
    bc_loss, accuracy, value_loss, gate = totals / len(demos)
    return {
        "bc_loss": bc_loss,
        "gate_loss": gate,
        "bc_accuracy": accuracy,
        "value_loss": value_loss,
        "return_mean": mean,
        "return_std": std,
        **({} if demos.paths is None else accuracy_by_path(correct, demos.paths)),
    }


def cloning_loss(logits: torch.Tensor, actions: torch.Tensor, weights: torch.Tensor | None) -> torch.Tensor:
    """Cross-entropy of ``logits`` against the teacher's ``actions``: the mean, or the ``weights``-weighted
    mean (each turn counts as its weight)."""
    if weights is None:
        return torch.nn.functional.cross_entropy(logits, actions)
    losses = torch.nn.functional.cross_entropy(logits, actions, reduction="none")
    return (losses * weights).sum() / weights.sum()
