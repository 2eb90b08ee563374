"""The refits a training run may make of its warm start on the policy's own play, before PPO: the gate
taught to read and follow ``load_switch``'s rule on big ``tabular`` clusters (:mod:`~.rule_gate_refit`,
``rule_gate``), then big clusters given a gate of their own (:mod:`~.split_step`, ``split_step``), DAgger
on the gate alone (:mod:`~.gate_dagger`, ``gate_rounds``) and then on every turn (:mod:`~.action_dagger`,
``action_rounds``). Each writes its checkpoint and a record of its rounds beside ``warm_start.pt``."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

from mara_agents.mara.action_dagger import action_rounds, action_sampler
from mara_agents.mara.checkpoint import save_checkpoint
from mara_agents.mara.gate_dagger import dagger_rounds
from mara_agents.mara.rule_gate_refit import rule_gate_refit
from mara_agents.mara.slot_network import SlotMARANet
from mara_agents.mara.split_step import split_step
from mara_env.torch_threads import torch_threads

if TYPE_CHECKING:
    from mara_agents.mara.ppo import PPOConfig

Evaluate = Callable[[], float]  # the policy's evaluation where PPO would now start (the network in eval mode)
EvaluateNet = Callable[[SlotMARANet], float]  # the same of a given network (a refit that returns a new one)


def refit_rule_gate(net, config: PPOConfig, out: Path, progress: bool, evaluate: EvaluateNet | None):
    """The warm start's copy that reads the rule, its gate refitted (:func:`~.rule_gate_refit.rule_gate_refit`):
    ``out/warm_start_rule_gate.pt``, its labels in ``out/warm_start_rule_gate_labels.npz`` and its record (with
    ``evaluate`` of the copy) in ``out/warm_start_rule_gate.json``. Returns the copy: the run goes on with it."""
    began = time.perf_counter()
    grafted, labels, report = rule_gate_refit(
        net, config.env, config.teacher, config.scenarios, out, jobs=config.processes, progress=progress
    )
    labels.save(out / "warm_start_rule_gate_labels.npz")
    save_checkpoint(grafted, out / "warm_start_rule_gate.pt", config.env, {"config": asdict(config), "iteration": 0})
    evaluate_copy = None if evaluate is None else (lambda: evaluate(grafted))
    write_record(grafted, report, began, out / "warm_start_rule_gate.json", evaluate_copy)
    return grafted


def refit_split(config: PPOConfig, out: Path, progress: bool, evaluate: EvaluateNet | None) -> SlotMARANet:
    """The split step on the rule-gate step's player and labels (:func:`~.split_step.split_step`):
    ``out/warm_start_split.pt`` and its record (with ``evaluate`` of it) in ``out/warm_start_split.json``,
    each part's network and the play's labels beside them. Returns the split network: the run goes on with it."""
    began = time.perf_counter()
    split, report = split_step(
        out / "rule_gate_player.pt", out / "warm_start_rule_gate_labels.npz", config.env, config.teacher,
        config.scenarios, out, jobs=config.processes, progress=progress,
    )  # fmt: skip
    save_checkpoint(split, out / "warm_start_split.pt", config.env, {"config": asdict(config), "iteration": 0})
    write_record(
        split, report, began, out / "warm_start_split.json", None if evaluate is None else (lambda: evaluate(split))
    )
    return split


def latest_refit(config: PPOConfig, out: Path, before: str) -> Path:
    """The checkpoint the refit ``before`` (``"gate"`` or ``"actions"``) starts from: the latest of the warm
    start, its rule-gate copy, that copy's split and (before the action rounds) its gate rounds that the run
    makes."""
    if before == "actions" and config.gate_rounds:
        return out / "warm_start_gate.pt"
    if config.rule_gate:
        return out / ("warm_start_split.pt" if config.split_step else "warm_start_rule_gate.pt")
    return out / "warm_start.pt"


def refit_gate(net, config: PPOConfig, out: Path, progress: bool, evaluate: Evaluate | None) -> None:
    """DAgger on the warm start's gate: ``out/warm_start_gate.pt``, its labels in
    ``out/warm_start_gate_labels.npz``, and per round its statistics in ``out/warm_start_gate.json``."""
    began, player = time.perf_counter(), latest_refit(config, out, "gate")
    rounds = dagger_rounds(
        net, player, config.env, config.teacher, config.scenarios, out / "warm_start_gate.pt",
        config.gate_rounds, config.gate_episodes, jobs=config.processes, progress=progress,
        labels_to=out / "warm_start_gate_labels.npz",
    )  # fmt: skip
    write_record(net, rounds, began, out / "warm_start_gate.json", evaluate)


def refit_actions(
    net, config: PPOConfig, out: Path, sizes: tuple[int, int], threads: int, progress: bool, evaluate: Evaluate | None
) -> tuple[float, float, int]:
    """DAgger on every turn of the warm start, after its gate rounds if any: ``out/warm_start_dagger.pt``,
    and per round its statistics in ``out/warm_start_dagger.json``. Returns the last refit's return mean
    and variance and the turns it fitted, where PPO's value normalisation starts from."""
    began = time.perf_counter()
    player = latest_refit(config, out, "actions")
    with torch_threads(threads):  # no workers run yet: the refits may use every core
        rounds = action_rounds(
            net, player, config.teacher, action_sampler(config.scenarios, config.action_focus),
            out / "warm_start_dagger.pt", sizes, config.action_rounds, config.action_episodes,
            config.action_epochs, config.action_learning_rate, config.gate_coef, config.row_buckets,
            config.processes, progress,
        )  # fmt: skip
    write_record(net, rounds, began, out / "warm_start_dagger.json", evaluate)
    last, turns = rounds[-1], sum(one["turns"] for one in rounds)  # the last refit fitted every round's turns
    return last["return_mean"], last["return_std"] ** 2, turns


def write_record(net, rounds: list[dict], began: float, path: Path, evaluate: Evaluate | None) -> None:
    """A refit's rounds, its seconds and (given ``evaluate``) the evaluation where PPO now starts, to ``path``."""
    record: dict = {"rounds": rounds, "seconds": round(time.perf_counter() - began, 1)}
    if evaluate is not None:
        net.eval()
        record["eval_completion_rate"] = evaluate()
        net.train()
    path.write_text(json.dumps(record, indent=1))
