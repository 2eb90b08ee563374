"""Fitting a generalist's selector: per slot, the learned gate or one planner's path alone.

A trained generalist mixes the skip paths of ``srw``, ``edf`` and ``uniform`` with a gate it learned
alongside the rest of the policy. On clusters of 32 and more nodes one planner wins nearly every seed
of a cell, and the gate still mixes in the others, so the generalist lost to that planner there.
Held on one path (:func:`~.gate_edits.pin_gate`) the network plays that planner's decisions exactly,
so choosing well between "as learned" and each path alone is a classification problem, which this
module fits after training, with the rest of the network frozen:

1. **Plays** (:func:`play_options`): for each of ``N`` scenarios drawn from a :class:`ScenarioSampler`
   (training curves, seeds from :data:`SELECTOR_SEED_BASE` up, which no training rollout,
   demonstration, validation or benchmark plays), play the network once per option of
   :data:`~.gate_paths.SELECTOR_OPTIONS`, and record the episode's completion rate and, at every
   slot with a task to choose, what the selector reads there (:func:`~.numpy_actor.slot_selector_inputs`).
2. **Fit** (:func:`fit_selector`): a cross-entropy of the selector's choice at every slot against
   its scenario's best option (ties go to the learned gate), each scenario weighing its spread (best
   minus worst completion) shared among its slots, so that scenarios where every option completes
   the same teach nothing; weight decay. (Maximising the expected advantage of the choice directly,
   ``sum_o p_o (c_o - mean c)``, was tried first: its softmax saturates on the learned gate, which
   wins most scenarios, and no other option is ever chosen again.) :func:`cross_validate` fits on all
   folds but one in turn and measures the held-out fold's gain over the learned gate
   (:func:`choice_report`): with single noisy episodes per scenario, that is the honest estimate.

Measured on the shipped generalist (``docs/mara_policy.md``): over 250 training scenarios the learned
gate is within 1.2 points of the per-scenario best option, and a fitted selector gains -0.02 points
held out; so no shipped checkpoint has a selector.
"""

from __future__ import annotations

import copy
import json
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from mara_agents.base import EnvRequirements
from mara_agents.evaluation import evaluate
from mara_agents.mara.checkpoint import load_checkpoint
from mara_agents.mara.gate_edits import add_selector, pin_gate, without_selector
from mara_agents.mara.gate_paths import SELECTOR_OPTIONS
from mara_agents.mara.numpy_actor import slot_selector_inputs
from mara_agents.mara.scenarios import TRAINING_SEED_BASE, ScenarioSampler
from mara_agents.mara.scheduler import MARAScheduler
from mara_agents.mara.slot_network import SlotMARANet
from mara_agents.mara.workers import map_forked
from mara_env.torch_threads import torch_threads

SELECTOR_SEED_BASE = TRAINING_SEED_BASE + 700_000_000  # above rollouts and demonstrations (+500,000,000)
# the test grid's clusters, full 300-slot episodes (short ones never fill a big cluster), every load
DEFAULT_SCENARIOS = ScenarioSampler(max_tasks_cap=128, horizon=(300, 300), fixed={"curve_split": "train"})


@dataclass
class OptionPlays:
    """What :func:`play_options` recorded: per scenario, every option's completion; per slot, its inputs."""

    outcomes: np.ndarray  # (scenarios, options): completion rate of each option's episode
    features: np.ndarray  # (slots, inputs): what the selector reads at each slot with a task
    scenario: np.ndarray  # (slots,): the scenario (row of ``outcomes``) each slot belongs to
    settings: list[dict]  # each scenario's env settings

    def save(self, path: Path) -> None:
        """Write the plays to ``path`` (``.npz``: arrays and one JSON string, no pickles)."""
        arrays = {"outcomes": self.outcomes, "features": self.features, "scenario": self.scenario}
        np.savez_compressed(path, **arrays, settings=np.array(json.dumps(self.settings)))

    @classmethod
    def load(cls, path: Path) -> OptionPlays:
        """Plays written by :meth:`save`; ``ValueError`` naming ``path`` for anything else."""
        try:
            with np.load(path, allow_pickle=False) as blob:
                arrays = {name: blob[name] for name in blob.files}
            settings = json.loads(str(arrays.get("settings", "[]")))
        except (OSError, EOFError, ValueError, zipfile.BadZipFile) as error:  # JSONDecodeError is a ValueError
            raise ValueError(f"{path}: not a readable file of selector plays ({error})") from error
        missing = {"outcomes", "features", "scenario", "settings"} - set(arrays)
        if missing:
            raise ValueError(f"{path}: not a file of selector plays (missing {sorted(missing)})")
        return cls(arrays["outcomes"], arrays["features"], arrays["scenario"], settings)

    @classmethod
    def concatenate(cls, parts: list[OptionPlays]) -> OptionPlays:
        """The plays of ``parts`` one after the other (scenarios renumbered)."""
        offsets = np.cumsum([0, *(len(part.outcomes) for part in parts[:-1])])
        return cls(
            np.concatenate([part.outcomes for part in parts]),
            np.concatenate([part.features for part in parts]),
            np.concatenate([part.scenario + offset for part, offset in zip(parts, offsets)]),
            [settings for part in parts for settings in part.settings],
        )

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
                vector = np.asarray(observation["observation"])
                self.inputs.append(slot_selector_inputs(parts.pooled, vector, self.scheduler.net.context_index))
        return action


def option_network(net: SlotMARANet, option: str) -> SlotMARANet:
    """``net`` (with a selector) playing one option alone: its learned gate, or one path pinned."""
    if option not in SELECTOR_OPTIONS:
        raise ValueError(f"option must be one of {list(SELECTOR_OPTIONS)}, got {option!r}")
    return without_selector(net) if option == "learned" else pin_gate(net, option)


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
    checkpoint: Path,
    scenarios: int,
    sampler: ScenarioSampler = DEFAULT_SCENARIOS,
    jobs: int = 1,
    progress: bool = True,
    first_seed: int = 0,
) -> OptionPlays:
    """Play every option of the generalist in ``checkpoint`` on ``scenarios`` scenarios (seeds from
    :data:`SELECTOR_SEED_BASE` ``+ first_seed``), in ``jobs`` processes; the same arguments give the
    same plays."""
    if scenarios < 1 or jobs < 1 or first_seed < 0:
        raise ValueError(f"scenarios and jobs must be >= 1 and first_seed >= 0, got {scenarios}, {jobs}, {first_seed}")
    load_checkpoint(Path(checkpoint))  # refuse a bad file before starting any process
    work = [(Path(checkpoint), SELECTOR_SEED_BASE + first_seed + i, sampler) for i in range(scenarios)]
    results = map_forked(_play_scenario, work, jobs, desc="selector plays", unit="scenario", disable=not progress)
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


def choice_loss(logits: torch.Tensor, plays: OptionPlays) -> torch.Tensor:
    """The fit's loss (see the module docstring) of the selector's ``logits`` ``(slots, options)``."""
    outcomes = torch.as_tensor(plays.outcomes, dtype=logits.dtype)
    best = outcomes.argmax(dim=1)  # the first best: the learned gate on a tie
    spread = outcomes.max(dim=1).values - outcomes.min(dim=1).values
    if float(spread.sum()) == 0.0:
        return logits.sum() * 0.0  # nothing to learn (keeps the graph)
    scenario = torch.as_tensor(plays.scenario)
    counts = torch.bincount(scenario, minlength=len(outcomes)).clamp(min=1).to(logits.dtype)
    weight = (spread / counts)[scenario]
    chosen = torch.log_softmax(logits, dim=-1).gather(1, best[scenario][:, None]).squeeze(1)
    return -(weight * chosen).sum() / spread.sum()


def fit_selector(
    net: SlotMARANet,
    plays: OptionPlays,
    steps: int = 1000,
    learning_rate: float = 1e-2,
    weight_decay: float = 0.1,
    seed: int = 0,
    threads: int | None = 1,
) -> SlotMARANet:
    """A copy of ``net`` (a selector is added if it has none) whose selector is fitted to ``plays``; the
    rest of the network is unchanged. Full-batch AdamW from a fresh selector seeded by ``seed``, on
    ``threads`` torch threads (restored after; one is fastest here: a small network whose products
    gain nothing from more, and 100 times slower with two threads on two busy cores)."""
    with torch_threads(threads):
        return _fit(net, plays, steps, learning_rate, weight_decay, seed)


def _fit(
    net: SlotMARANet, plays: OptionPlays, steps: int, learning_rate: float, weight_decay: float, seed: int
) -> SlotMARANet:
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
        loss = choice_loss(fitted.selector(features), plays)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return fitted


def cross_validate(net: SlotMARANet, plays: OptionPlays, folds: int = 5, **fit: float) -> list[dict[str, float]]:
    """:func:`choice_report` of each fold (scenarios ``k, k + folds, ...``) under a selector fitted on
    the others (``fit``: :func:`fit_selector`'s keywords)."""
    count = len(plays.outcomes)
    if not 2 <= folds <= count:
        raise ValueError(f"folds must lie in [2, scenarios = {count}], got {folds}")
    reports = []
    for fold in range(folds):
        held = np.arange(fold, count, folds)
        fitted = fit_selector(net, plays.subset(np.setdiff1d(np.arange(count), held)), **fit)
        reports.append(choice_report(fitted, plays.subset(held)))
    return reports


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
