"""Fitting a generalist's selector: per slot, the learned gate or one planner's path alone.

A trained generalist mixes the skip paths of ``srw``, ``edf`` and ``uniform`` with a gate it learned
alongside the rest of the policy. On clusters of 32 and more nodes one planner wins nearly every seed
of a cell, and the gate still mixes in the others, so the generalist lost to that planner there.
Held on one path (:func:`~.slot_network.pin_gate`) the network plays that planner's decisions exactly,
so choosing well between "as learned" and each path alone is a classification problem, which this
module fits after training, with the rest of the network frozen:

1. **Plays** (:func:`play_options`): for each of ``N`` scenarios drawn from a :class:`ScenarioSampler`
   (training curves, seeds from :data:`SELECTOR_SEED_BASE` up, which no training rollout,
   demonstration, validation or benchmark plays), play the network once per option of
   :data:`~.slot_network.SELECTOR_OPTIONS`, and record the episode's completion rate and, at every
   slot with a task to choose, what the selector reads there (:func:`~.numpy_actor.slot_selector_inputs`).
2. **Fit** (:func:`fit_selector`): the selector's weights maximise the expected advantage of its
   choice, ``sum_o p_o(x) (c_eo - mean_o c_eo)`` per slot ``x`` of scenario ``e``, each scenario
   weighing the same, with weight decay; scenarios where every option completes the same teach
   nothing and cost nothing. A held-out share of the scenarios measures the fitted choice against the
   learned gate, the best single option and the per-scenario best (:func:`choice_report`).
"""

from __future__ import annotations

import copy
import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from tqdm.auto import tqdm

from mara_agents.base import EnvRequirements
from mara_agents.evaluation import evaluate
from mara_agents.mara.checkpoint import load_checkpoint
from mara_agents.mara.numpy_actor import slot_selector_inputs
from mara_agents.mara.scenarios import TRAINING_SEED_BASE, ScenarioSampler
from mara_agents.mara.scheduler import MARAScheduler
from mara_agents.mara.slot_network import SELECTOR_OPTIONS, SlotMARANet, add_selector, pin_gate
from mara_agents.mara.workers import one_torch_thread

SELECTOR_SEED_BASE = TRAINING_SEED_BASE + 700_000_000  # above rollouts and demonstrations (+500,000,000)
# the test grid's clusters, full 300-slot episodes (short ones never fill a big cluster), every load
DEFAULT_SCENARIOS = ScenarioSampler(
    max_tasks_cap=128, rows_per_node=(1.0, 4.0), horizon=(300, 300), fixed={"curve_split": "train"}
)


@dataclass
class OptionPlays:
    """What :func:`play_options` recorded: per scenario, every option's completion; per slot, its inputs."""

    outcomes: np.ndarray  # (scenarios, options): completion rate of each option's episode
    features: np.ndarray  # (slots, inputs): what the selector reads at each slot with a task
    scenario: np.ndarray  # (slots,): the scenario (row of ``outcomes``) each slot belongs to
    settings: list[dict]  # each scenario's env settings

    def subset(self, scenarios: np.ndarray) -> OptionPlays:
        """The plays of the given scenario indices, renumbered from 0."""
        keep = np.isin(self.scenario, scenarios)
        renumber = np.full(len(self.outcomes), -1)
        renumber[scenarios] = np.arange(len(scenarios))
        settings = [self.settings[i] for i in scenarios]
        return OptionPlays(self.outcomes[scenarios], self.features[keep], renumber[self.scenario[keep]], settings)


class _InputRecorder:
    """Plays a MARA scheduler and records the selector's inputs at every slot with a task."""

    def __init__(self, scheduler: MARAScheduler) -> None:
        self.scheduler = scheduler
        self.requirements: EnvRequirements = scheduler.requirements
        self.inputs: list[np.ndarray] = []
        self._parts: object | None = None

    def reset(self, seed: int | None = None) -> None:
        self.scheduler.reset(seed)
        self._parts = None

    def act(self, observation: dict, agent: str) -> int:
        action = self.scheduler.act(observation, agent)
        parts = self.scheduler.slot_parts
        if parts is not self._parts:
            self._parts = parts
            if np.asarray(observation["action_mask"])[1:].any():
                self.inputs.append(slot_selector_inputs(parts.pooled, np.asarray(observation["observation"])))
        return action


def option_network(net: SlotMARANet, option: str) -> SlotMARANet:
    """``net`` (with a selector) playing one option alone: its learned gate, or one path pinned."""
    if option not in SELECTOR_OPTIONS:
        raise ValueError(f"option must be one of {list(SELECTOR_OPTIONS)}, got {option!r}")
    if option != "learned":
        return pin_gate(net, option)
    learned = copy.deepcopy(net)
    learned.selector, learned.config["selector"] = None, False
    return learned


def _play_scenario(job: tuple[Path, int, ScenarioSampler]) -> tuple[dict, list[float], list[np.ndarray]]:
    """One scenario's settings, each option's completion and each option's recorded inputs."""
    checkpoint, seed, sampler = job
    net, env, _ = load_checkpoint(checkpoint)
    net = net if net.selector is not None else add_selector(net)
    settings = sampler.sample(np.random.default_rng([seed, 0x5E1]))
    completions, inputs, width = [], [], net.selector[0].in_features
    for option in SELECTOR_OPTIONS:
        recorder = _InputRecorder(MARAScheduler(option_network(net, option), trained_env=env))
        completions.append(evaluate(recorder, [seed], **settings)[0]["completion_rate"])
        inputs.append(np.asarray(recorder.inputs, dtype=np.float32).reshape(-1, width))  # an episode may have no task
    return settings, completions, inputs


def play_options(
    checkpoint: Path, scenarios: int, sampler: ScenarioSampler = DEFAULT_SCENARIOS, jobs: int = 1, progress: bool = True
) -> OptionPlays:
    """Play every option of the generalist in ``checkpoint`` on ``scenarios`` scenarios (seeds from
    :data:`SELECTOR_SEED_BASE`), in ``jobs`` processes; the same arguments give the same plays."""
    if scenarios < 1 or jobs < 1:
        raise ValueError(f"scenarios and jobs must be >= 1, got scenarios={scenarios}, jobs={jobs}")
    load_checkpoint(Path(checkpoint))  # refuse a bad file before starting any process
    work = [(Path(checkpoint), SELECTOR_SEED_BASE + i, sampler) for i in range(scenarios)]
    bar = dict(total=scenarios, desc="selector plays", unit="scenario", disable=not progress)
    if jobs == 1:
        results = [_play_scenario(job) for job in tqdm(work, **bar)]
    else:
        # forked on one torch thread each (a fork of a process that ran torch's thread pool hangs otherwise)
        context = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else None)
        with ProcessPoolExecutor(max_workers=jobs, mp_context=context, initializer=one_torch_thread) as pool:
            results = list(tqdm(pool.map(_play_scenario, work), **bar))
    features, scenario = [], []
    for index, (_, _, inputs) in enumerate(results):
        for recorded in inputs:
            features.append(recorded)
            scenario.append(np.full(len(recorded), index))
    outcomes = np.array([completions for _, completions, _ in results], dtype=np.float64)
    return OptionPlays(outcomes, np.concatenate(features), np.concatenate(scenario), [s for s, _, _ in results])


def choice_probabilities(net: SlotMARANet, features: np.ndarray) -> np.ndarray:
    """``(slots, options)``: the selector's distribution over :data:`SELECTOR_OPTIONS` at each slot."""
    with torch.no_grad():
        return torch.softmax(net.selector(torch.as_tensor(features)), -1).numpy()


def expected_advantage(choice: torch.Tensor, plays: OptionPlays) -> torch.Tensor:
    """Mean over scenarios of the slot-averaged ``sum_o choice_o (c_eo - mean_o c_eo)``."""
    outcomes = torch.as_tensor(plays.outcomes, dtype=choice.dtype)
    advantage = outcomes - outcomes.mean(dim=1, keepdim=True)
    scenario = torch.as_tensor(plays.scenario)
    per_slot = (choice * advantage[scenario]).sum(-1)
    counts = torch.bincount(scenario, minlength=len(outcomes)).clamp(min=1).to(choice.dtype)
    per_scenario = torch.zeros(len(outcomes), dtype=choice.dtype).index_add(0, scenario, per_slot) / counts
    return per_scenario.mean()


def fit_selector(
    net: SlotMARANet,
    plays: OptionPlays,
    steps: int = 400,
    learning_rate: float = 3e-3,
    weight_decay: float = 1e-3,
    seed: int = 0,
) -> SlotMARANet:
    """A copy of ``net`` (a selector is added if it has none) whose selector is fitted to ``plays``; the
    rest of the network is unchanged. Full-batch Adam from a fresh selector seeded by ``seed``."""
    fitted = copy.deepcopy(net) if net.selector is not None else add_selector(net)
    generator = torch.Generator().manual_seed(seed)
    for layer in (fitted.selector[0], fitted.selector[2]):
        bound = 1.0 / layer.in_features**0.5
        with torch.no_grad():
            layer.weight.uniform_(-bound, bound, generator=generator)
            layer.bias.zero_()
    features = torch.as_tensor(plays.features)
    optimizer = torch.optim.AdamW(fitted.selector.parameters(), lr=learning_rate, weight_decay=weight_decay)
    for _ in range(steps):
        loss = -expected_advantage(torch.softmax(fitted.selector(features), -1), plays)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return fitted


def choice_report(net: SlotMARANet, plays: OptionPlays) -> dict[str, float]:
    """Mean completion over ``plays``' scenarios of: each option alone, the best single option, the
    per-scenario best (a ceiling), and the selector's choice (its slot-averaged distribution weighing
    each option's completion; the real play mixes the paths, which ``mara_select.py`` measures)."""
    choice = choice_probabilities(net, plays.features)
    share = np.zeros_like(plays.outcomes)
    np.add.at(share, plays.scenario, choice)
    share /= np.maximum(share.sum(axis=1, keepdims=True), 1e-12)
    report = {option: float(plays.outcomes[:, i].mean()) for i, option in enumerate(SELECTOR_OPTIONS)}
    report["best single"] = max(report[option] for option in SELECTOR_OPTIONS)
    report["per-scenario best"] = float(plays.outcomes.max(axis=1).mean())
    report["selector"] = float((share * plays.outcomes).sum(axis=1).mean())
    report |= {f"chose {option}": float(share[:, i].mean()) for i, option in enumerate(SELECTOR_OPTIONS)}
    return report
