"""PPO with GAE for the MARA policy, readable top to bottom (in the spirit of CleanRL's ``ppo.py``).

Every node turn is one step of one shared agent: the acting node's observation goes to the actor,
the env's global ``state()`` to the centralised critic, and the team reward arrives on the last turn
of each slot. With ``gamma = 1`` (the objective is the undiscounted number of completions) and the
env's potential-based shaping on, GAE runs along the sequence of turns.

Warm start and guidance (our design; the paper's summary does not describe one): with a ``teacher``
the run first clones the teacher's actions on ``warm_start_episodes`` teacher episodes and fits the
critic to their returns (:mod:`mara_agents.mara.imitation`); during PPO the teacher labels every
turn the policy visits and a cross-entropy term with weight ``guide_coef``, annealed to 0 by
``guide_until`` of the run, keeps the policy near it while the critic catches up. PPO alone decides
what the policy does after that, unless ``guide_floor`` keeps a smaller weight on to the end
(with ``guide_where_trailing``, only on the scenario kinds where a ``best`` teacher, or its best single
candidate, still completes more than the student; with ``guide_floor_min_nodes``, only on clusters of
at least that many nodes: :mod:`~mara_agents.mara.guidance`).

Gate supervision (``gate_coef`` > 0, a hinted slot actor with a ``best`` teacher): the teacher follows
one planner per episode, and a cross-entropy on the actor's gate (:func:`~.gate_paths.gate_loss`)
asks it to pick that planner's skip path, with weight ``gate_coef`` in the warm start and
``gate_coef`` scaled as the guide is annealed during PPO, never below ``gate_floor``.

A run may start from another run's warm start (``warm_start_from``: its weights and the return
statistics of its teacher episodes) instead of cloning anew, so that PPO variants are compared from
one warm start and each skips the cloning's 20-odd minutes.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch
from tqdm.auto import tqdm

from mara_agents.mara.action_dagger import check_action_settings
from mara_agents.mara.advantages import RunningMeanStd
from mara_agents.mara.checkpoint import save_checkpoint
from mara_agents.mara.exploration import actor_mean, check_explore_nodes, normalised_advantages
from mara_agents.mara.gate_paths import logits_and_gate_loss
from mara_agents.mara.guidance import (
    TeacherLead,
    check_gate_settings,
    check_guide_settings,
    floor_held,
    gate_weight,
    guide_weights,
)
from mara_agents.mara.network import MARANet
from mara_agents.mara.own_play_refits import refit_actions, refit_gate, refit_rule_gate, refit_split
from mara_agents.mara.rollout import collect_rollout, finite
from mara_agents.mara.row_buckets import critic_values, rows_needed, size_buckets, trim_batch
from mara_agents.mara.run_log import log_row, tensorboard_writer
from mara_agents.mara.scenarios import TRAINING_SEED_BASE, VALIDATION_SEED, ScenarioFocus, ScenarioSampler
from mara_agents.mara.warm_start import build_network, load_warm_start
from mara_agents.mara.workers import RayWorkerPool, WorkerPool
from mara_env.config import DEFAULTS
from mara_env.torch_threads import torch_threads


@dataclass
class PPOConfig:
    total_turns: int = 400_000
    num_envs: int = 16
    processes: int = 2
    rollout_turns: int = 256
    epochs: int = 3
    minibatches: int = 4
    learning_rate: float = 1e-4
    anneal_lr: bool = True
    gamma: float = 1.0
    gae_lambda: float = 0.95
    clip: float = 0.2
    clip_value: bool = True
    value_coef: float = 0.5
    entropy_coef: float = 0.005
    max_grad_norm: float = 0.5
    target_kl: float | None = 0.05
    teacher: str | None = "srw"
    warm_start_episodes: int = 100
    warm_start_epochs: int = 4
    guide_coef: float = 0.5
    guide_until: float = 0.5
    guide_floor: float = 0.0  # the guide's weight never falls below this (0: PPO alone at the end)
    guide_where_trailing: str | None = None  # the floor only on scenario kinds the teacher leads: .guidance.LEADS
    guide_floor_min_nodes: int | None = None  # the floor only on clusters of at least this many nodes
    explore_nodes: float | None = None  # about this many sampled turns per slot, the rest greedy (.exploration)
    gate_coef: float = 0.0  # hinted slot actor, best teacher: fit the gate to the planner the teacher follows
    gate_floor: float = 0.0  # the gate loss's weight never falls below this in PPO (0: off once the guide is)
    warm_start_from: str | None = None  # a run directory: start from its warm_start.pt instead of cloning anew
    rule_gate: bool = False  # after the warm start: the gate reads load_switch's path, follows it on big tabular
    split_step: bool = False  # after the rule-gate step: big clusters get a gate of their own (.split_step)
    gate_rounds: int = 0  # after the warm start: rounds of DAgger on the gate alone (gate_dagger; 0: none)
    gate_episodes: int = 200  # scenarios the policy plays per gate round, labelled by the teacher
    action_rounds: int = 0  # after the warm start (and gate rounds): rounds of DAgger on every turn (action_dagger)
    action_episodes: int = 100  # scenarios the policy plays per action round, every turn labelled by the teacher
    action_epochs: int = 2  # cloning epochs per action round, on every round's turns so far
    action_learning_rate: float = 3e-4  # the action rounds' cloning step (the warm start's: 1e-3)
    action_focus: ScenarioFocus | None = None  # one more focus of the scenarios the action rounds play
    seed: int = 0
    width: int = 64
    layers: int = 2
    autoregressive: bool = True
    planner_hints: bool = False  # the slot actor reads the srw plan of each slot (mara_agents.mara.hints)
    pick_hints: bool = False  # hinted slot actor: skip paths also read the row srw / edf picks at this turn
    uniform_pick: bool = False  # with pick hints: a third skip path on the row uniform picks, softmax-gated
    size_context: bool = False  # slot actor: the slot's context holds log2 M, so size-dependent teachers are learnable
    load_signal: bool = False  # slot actor: the slot's context and the critic read the arrival_rate global too
    gate_context: bool = False  # hinted slot actor: the gate reads the arrival rate and log2 M beside the slot token
    rule_start: bool = False  # hinted slot actor: skip paths start at srw's and edf's rules (start_at_rules)
    scenarios: ScenarioSampler | None = None  # None: every copy plays ``env``; else a scenario per episode
    ray_address: str | None = None  # None: local worker processes; "local" or an address: Ray actors
    architecture: str = "joint"  # "joint" (the shipped actor) or "slot" (slot encoded once, light turn head)
    row_buckets: bool = False  # minibatches of similar table size, cut to the rows in use (.row_buckets)
    eval_every: int = 40
    eval_seeds: int = 5
    env: dict = field(
        default_factory=lambda: {
            "num_nodes": DEFAULTS.num_nodes,
            "max_tasks": DEFAULTS.max_tasks,
            "horizon": DEFAULTS.horizon,
            "workload": DEFAULTS.workload,
            "load": DEFAULTS.load,
            "shaping": True,  # the potential-based progress reward (the env's default is off)
            "forecaster": DEFAULTS.forecaster,
            "curve_split": "train",
        }
    )


def evaluate_policy(net: MARANet, config: PPOConfig, agent: object | None = None) -> float:
    """Mean completion rate on held-out seeds and ``val`` curves (unshaped), of ``net`` or ``agent``."""
    from mara_agents.evaluation import evaluate
    from mara_agents.mara.scheduler import MARAScheduler

    env = {**config.env, "curve_split": "val", "shaping": False}
    seeds = range(VALIDATION_SEED, VALIDATION_SEED + config.eval_seeds)
    scheduler = agent if agent is not None else MARAScheduler(net, threads=None, trained_env=config.env)
    return float(np.mean([r["completion_rate"] for r in evaluate(scheduler, seeds, **env)]))


def batch_sizes(config: PPOConfig) -> tuple[int, int]:
    """``(M, K_max)`` of the vectors the learner sees: the env's, or the largest scenario's (the
    workers pad every scenario to it)."""
    if config.scenarios is not None:
        return config.scenarios.max_nodes, config.scenarios.max_tasks_cap
    return config.env["num_nodes"], config.env["max_tasks"]


def make_pool(config: PPOConfig) -> WorkerPool | RayWorkerPool:
    """The rollout workers: local processes, or Ray actors when ``config.ray_address`` is set."""
    args = (config.num_envs, config.env, config.seed, config.processes, config.teacher)
    if config.ray_address is None:
        return WorkerPool(*args, scenarios=config.scenarios)
    return RayWorkerPool(*args, scenarios=config.scenarios, address=config.ray_address)


def train(config: PPOConfig, out: Path, progress: bool = True) -> dict:
    """Train, logging to ``out/log.csv`` (and TensorBoard if installed); checkpoints in ``out``.

    Seeded by ``config.seed``; torch's global RNG is forked for the run, so the caller's is as it was."""
    with torch.random.fork_rng(devices=[]):
        return _train(config, out, progress, torch.get_num_threads())


def _train(config: PPOConfig, out: Path, progress: bool, threads: int) -> dict:
    from mara_agents.registry import make

    torch.manual_seed(config.seed)
    rng = np.random.default_rng(config.seed)
    env_cfg = config.env
    m, k = batch_sizes(config)
    net = build_network(config)
    if config.rule_start:
        net.start_at_rules()
    check_gate_settings(net, config)
    check_action_settings(config)
    check_guide_settings(config)
    check_explore_nodes(config.explore_nodes)
    reused = load_warm_start(config) if config.warm_start_from else None  # checked before any work
    optimiser = torch.optim.Adam(net.parameters(), lr=config.learning_rate, eps=1e-5)
    returns_stats = RunningMeanStd()
    out.mkdir(parents=True, exist_ok=True)
    if reused is not None:
        warm = _reuse_warm_start(net, reused, returns_stats, config.warm_start_from)
    else:
        warm = _warm_start(net, config, returns_stats, threads, progress) if config.teacher else {}
    if warm:
        save_checkpoint(net, out / "warm_start.pt", env_cfg, {"config": asdict(config), "iteration": 0})
        (out / "warm_start.json").write_text(json.dumps(warm, indent=1))
        evaluate = (lambda: evaluate_policy(net, config)) if config.eval_seeds else None
        if config.rule_gate:  # a copy with a wider gate: the run goes on with it, and a fresh optimiser
            evaluate_net = (lambda other: evaluate_policy(other, config)) if config.eval_seeds else None
            net = refit_rule_gate(net, config, out, progress, evaluate_net)
            if config.split_step:
                net = refit_split(config, out, progress, evaluate_net)
            optimiser = torch.optim.Adam(net.parameters(), lr=config.learning_rate, eps=1e-5)
        if config.gate_rounds:
            refit_gate(net, config, out, progress, evaluate)
        if config.action_rounds:
            refitted = refit_actions(net, config, out, (m, k), threads, progress, evaluate)
            returns_stats.mean, returns_stats.var, returns_stats.count = refitted
    # one torch thread for rollouts (small batches; the cores belong to the env workers), every core for updates
    with torch_threads(1):
        pool = make_pool(config)
        writer = tensorboard_writer(out)
        log_path = out / "log.csv"
        iterations = max(1, config.total_turns // (config.rollout_turns * config.num_envs))
        finished_rates: list[float] = []
        # per scenario kind, the teacher's lead over the student (only a run that gates its guide on it keeps one)
        lead = TeacherLead(config.guide_where_trailing) if config.guide_where_trailing else None
        history = []
        baseline = evaluate_policy(net, config, agent=make("lara")) if config.eval_seeds else float("nan")
        evaluation = float("nan")
        start = time.perf_counter()
        try:
            turns = pool.observe()
            bar = tqdm(range(1, iterations + 1), desc="mara ppo", disable=not progress)
            for iteration in bar:
                if config.anneal_lr:  # learning-rate annealing to 0
                    optimiser.param_groups[0]["lr"] = config.learning_rate * (1.0 - (iteration - 1) / iterations)
                batch, turns = collect_rollout(net, pool, turns, config, k, m, returns_stats, rng, finished_rates, lead)
                held = floor_held(config, lead, batch["kinds"], batch["nodes"])
                guide = guide_weights(config, iteration, iterations, held)
                with torch_threads(threads):  # the workers wait during the update: use every core
                    stats = _update(
                        net, optimiser, batch, config, k, m, returns_stats, guide if config.teacher else 0.0
                    )
                stats["guide_trailing_share"] = float("nan") if held is None else float(np.mean(held))
                stats["explored_share"] = float(np.mean(batch["explored"]))  # turns that sampled their action
                if config.eval_seeds and (iteration % config.eval_every == 0 or iteration == iterations):
                    net.eval()
                    evaluation = evaluate_policy(net, config)  # periodic evaluation beside lara
                    net.train()
                row = {
                    "iteration": iteration,
                    "turns": iteration * config.rollout_turns * config.num_envs,
                    "seconds": round(time.perf_counter() - start, 1),
                    "train_completion_rate": float(np.mean(finished_rates[-20:])) if finished_rates else float("nan"),
                    "eval_completion_rate": evaluation,
                    "lara_completion_rate": baseline,
                    **stats,
                }
                history.append(row)
                log_row(log_path, row, writer)
                bar.set_postfix(done=f"{row['train_completion_rate']:.3f}", kl=f"{stats['approx_kl']:.4f}")
                if iteration % config.eval_every == 0 or iteration == iterations:
                    extra = {"config": asdict(config), "iteration": iteration}
                    save_checkpoint(net, out / "checkpoint.pt", env_cfg, extra)
                    # every evaluated checkpoint is kept, so a run's schedule can be chosen on validation seeds
                    save_checkpoint(net, out / "checkpoints" / f"iteration_{iteration:05d}.pt", env_cfg, extra)
        finally:
            pool.close()
            if writer is not None:
                writer.close()
        (out / "config.json").write_text(json.dumps(asdict(config), indent=1))
        return {"history": history, "seconds": time.perf_counter() - start, "warm_start": warm}


def _reuse_warm_start(net, reused: tuple, returns_stats: RunningMeanStd, source: str) -> dict:
    """Start from a loaded warm start (:func:`load_warm_start`) instead of cloning anew."""
    saved, stats = reused
    net.load_state_dict(saved.state_dict())
    returns_stats.mean, returns_stats.var = float(stats["return_mean"]), float(stats["return_std"]) ** 2
    returns_stats.count = float(stats["turns"])
    return {**stats, "from": str(source)}


def warm_start_seeds(seed: int, episodes: int, scenarios: bool) -> list[int]:
    """The seeds of a run's warm-start (teacher) episodes: from 1,500,000,000 on scenarios (above every
    rollout seed), else from 20,000,000; a run's ``seed`` moves them by 100,000."""
    first = (TRAINING_SEED_BASE + 500_000_000 if scenarios else 20_000_000) + seed * 100_000
    return [first + i for i in range(episodes)]


def _warm_start(net: MARANet, config: PPOConfig, returns_stats: RunningMeanStd, threads: int, progress: bool) -> dict:
    """Clone the teacher on its own episodes; start value normalisation from their returns."""
    from mara_agents.mara.imitation import clone, collect_demonstrations

    began = time.perf_counter()
    seeds = warm_start_seeds(config.seed, config.warm_start_episodes, config.scenarios is not None)
    demos = collect_demonstrations(config.env, config.teacher, seeds, config.processes, progress, config.scenarios)
    m, k = batch_sizes(config)
    with torch_threads(threads):  # no workers run yet: the cloning may use every core
        stats = clone(
            net,
            demos,
            m,
            k,
            config.warm_start_epochs,
            seed=config.seed,
            progress=progress,
            row_buckets=config.row_buckets,
            gate_coef=config.gate_coef,
        )
    returns_stats.mean, returns_stats.var, returns_stats.count = (
        stats["return_mean"],
        stats["return_std"] ** 2,
        len(demos),
    )
    stats.update(turns=len(demos), teacher_completion_rate=float(demos.completion_rates.mean()))
    stats["seconds"] = round(time.perf_counter() - began, 1)
    if config.eval_seeds:  # where PPO starts from, on the evaluation seeds
        net.eval()
        stats["eval_completion_rate"] = evaluate_policy(net, config)
        net.train()
    return {key: float(value) for key, value in stats.items()}


def _update(net, optimiser, batch, config, k, m, returns_stats, guide: float | np.ndarray = 0.0) -> dict:
    """PPO epochs over minibatches: clipped surrogate, clipped value loss, entropy bonus, and the
    teacher's cross-entropy with weight ``guide`` (0 turns it off; an array: one weight per turn), and the
    gate's (:func:`gate_weight`, annealed with the largest of the guide's weights)."""
    size = batch["obs"].shape[0]
    tensors = {key: torch.as_tensor(value) for key, value in batch.items()}
    norm_returns = (tensors["returns"] - returns_stats.mean) / returns_stats.std  # value normalisation
    norm_values = (tensors["values"] - returns_stats.mean) / returns_stats.std
    minibatch = size // config.minibatches
    sizes = rows_needed(batch["obs"], batch["states"]) if config.row_buckets else None
    kls, clipfracs, agreements, gate_losses, stats = [], [], [], [], {}
    gate_coef = gate_weight(config, float(np.max(guide)))
    per_turn = torch.as_tensor(guide, dtype=torch.float32) if np.ndim(guide) else None
    supervise_gate = gate_coef > 0.0
    for _epoch in range(config.epochs):
        if sizes is None:
            minibatches = torch.randperm(size).split(minibatch)
        else:  # one pool: the minibatches split the batch by table size
            minibatches = size_buckets(sizes, minibatch, None, pool_batches=config.minibatches)
        for idx in minibatches:
            obs, masks, states = tensors["obs"][idx], tensors["masks"][idx], tensors["states"][idx]
            if sizes is not None:
                obs, masks, states = trim_batch(obs, masks, states, int(sizes[idx].max()))
            logits, gate = logits_and_gate_loss(net, obs, masks, tensors["paths"][idx] if supervise_gate else None)
            logits = finite(logits)
            dist = torch.distributions.Categorical(logits=logits)
            new_logprob = dist.log_prob(tensors["actions"][idx])
            log_ratio = new_logprob - tensors["logprobs"][idx].float()
            ratio = log_ratio.exp()
            # the actor learns from the turns that sampled (all of them unless explore_nodes is set)
            explored = None if config.explore_nodes is None else tensors["explored"][idx]
            with torch.no_grad():
                kls.append(float(actor_mean((ratio - 1) - log_ratio, explored)))  # the low-variance KL estimator
                clipfracs.append(float(actor_mean(((ratio - 1.0).abs() > config.clip).float(), explored)))
            adv = normalised_advantages(tensors["advantages"][idx].float(), explored)  # advantage normalisation
            clipped_ratio = ratio.clamp(1 - config.clip, 1 + config.clip)
            policy_loss = actor_mean(torch.max(-adv * ratio, -adv * clipped_ratio), explored)
            value = net.value(states, m, k)
            target = norm_returns[idx].float()
            value_loss = (value - target) ** 2
            if config.clip_value:  # clipped value loss around the rollout's values
                clipped = norm_values[idx].float() + (value - norm_values[idx].float()).clamp(-config.clip, config.clip)
                value_loss = torch.max(value_loss, (clipped - target) ** 2)
            value_loss = 0.5 * value_loss.mean()
            entropy = actor_mean(dist.entropy(), explored)
            loss = policy_loss + config.value_coef * value_loss - config.entropy_coef * entropy
            labels = tensors["labels"][idx]
            if per_turn is not None:  # the teacher's pull where it leads (guide_where_trailing)
                teacher_loss = torch.nn.functional.cross_entropy(logits, labels.clamp(min=0), reduction="none")
                loss = loss + (per_turn[idx] * teacher_loss).mean()
            elif guide > 0.0:  # stay near the teacher on the states the policy visits (DAgger-style)
                loss = loss + guide * torch.nn.functional.cross_entropy(logits, labels.clamp(min=0))
            loss = loss + gate_coef * gate  # and on the planner it follows (gate supervision; 0: off)
            gate_losses.append(gate.item())
            agreements.append(float((logits.argmax(-1) == labels).float().mean()))
            optimiser.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(net.parameters(), config.max_grad_norm)  # gradient clipping
            optimiser.step()
        if config.target_kl is not None and np.mean(kls) > config.target_kl:
            break
    with torch.no_grad():
        values = net.value(tensors["states"], m, k) if sizes is None else critic_values(net, tensors["states"], sizes)
        predicted = values.numpy() * returns_stats.std + returns_stats.mean
    variance = np.var(batch["returns"])
    explained = float("nan") if variance == 0 else 1.0 - np.var(batch["returns"] - predicted) / variance
    stats.update(
        policy_loss=policy_loss.item(),
        value_loss=value_loss.item(),
        entropy=entropy.item(),
        approx_kl=float(np.mean(kls)),
        clipfrac=float(np.mean(clipfracs)),
        explained_variance=float(explained),
        learning_rate=optimiser.param_groups[0]["lr"],
        guide_coef=float(np.mean(guide)),
        gate_loss=float(np.mean(gate_losses)),
        teacher_agreement=float(np.mean(agreements)) if config.teacher else float("nan"),
    )
    return stats
