"""Cloning the teacher on the states the policy reaches itself: DAgger on every turn's action.

A warm start clones the teacher on the teacher's own episodes. Where the student departs from them
(a big ``tabular`` cluster under load: its gate follows the right planner, yet its turns do not, see
docs/mara_policy.md) it meets states the teacher never showed it. DAgger (Ross, Gordon and Bagnell,
2011) plays the student and asks the teacher what it would do at each of the student's turns. Here a
round:

1. **plays** ``episodes`` scenarios with the current student acting, after the same planner warm-up as
   the warm start, on seeds from :data:`ACTION_SEED_BASE` up (no rollout, demonstration, gate label,
   selector play or evaluation uses them); the teacher labels every recorded turn with its action
   and the planner it follows (:func:`~.imitation.collect_demonstrations` with ``student``);
2. **refits** the whole network on every round's labels so far by :func:`~.imitation.clone` (the actor
   to the teacher's actions, the gate to its planners, the critic to the student's own returns).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from mara_agents.mara.checkpoint import load_checkpoint, save_checkpoint
from mara_agents.mara.imitation import Demonstrations, clone, collect_demonstrations
from mara_agents.mara.network import MARANet
from mara_agents.mara.path_weighting import check_path_weights
from mara_agents.mara.scenarios import TRAINING_SEED_BASE, ScenarioFocus, ScenarioSampler
from mara_agents.mara.slot_network import SlotMARANet

if TYPE_CHECKING:
    from mara_agents.mara.ppo import PPOConfig

ACTION_SEED_BASE = TRAINING_SEED_BASE + 900_000_000  # above gate labels (+800,000,000) and selector plays


def action_sampler(scenarios: ScenarioSampler | None, focus: ScenarioFocus | None) -> ScenarioSampler | None:
    """The scenarios the rounds play: the training run's, with ``focus`` added to its foci (``ValueError``
    naming the rounds' focus when it does not fit the run's sampler)."""
    if focus is None:
        return scenarios
    if scenarios is None:
        raise ValueError("an action focus needs a run on scenarios (--generalist): there is nothing to focus")
    try:
        return dataclasses.replace(scenarios, more_foci=(*scenarios.more_foci, focus))
    except ValueError as error:
        raise ValueError(f"action focus {focus}: {error}") from None


def check_action_settings(config: PPOConfig) -> None:
    """``ValueError`` before any work where a run's action rounds cannot be honoured."""
    if config.action_rounds < 0 or config.action_episodes < 1 or config.action_epochs < 1:
        raise ValueError(
            "action_rounds must be >= 0, action_episodes and action_epochs >= 1: "
            f"{config.action_rounds}, {config.action_episodes}, {config.action_epochs}"
        )
    if not config.action_learning_rate > 0:  # NaN fails too
        raise ValueError(f"action_learning_rate must be > 0, got {config.action_learning_rate}")
    if config.action_rounds and config.teacher is None:
        raise ValueError("action_rounds > 0 needs a teacher (it labels the policy's own turns)")
    action_sampler(config.scenarios, config.action_focus)


def action_seeds(round_index: int, episodes: int) -> list[int]:
    """The scenarios round ``round_index`` (from 0) plays."""
    first = ACTION_SEED_BASE + round_index * episodes
    return list(range(first, first + episodes))


def action_rounds(
    net: MARANet | SlotMARANet,
    checkpoint: Path,
    teacher: str,
    scenarios: ScenarioSampler | None,
    save_to: Path,
    sizes: tuple[int, int],
    rounds: int = 1,
    episodes: int = 100,
    epochs: int = 2,
    learning_rate: float = 3e-4,
    gate_coef: float = 0.0,
    row_buckets: bool = True,
    jobs: int = 2,
    progress: bool = True,
    anchor: Demonstrations | None = None,
    freeze: Sequence[str] = (),
    path_weights: Mapping[str, float] | None = None,
) -> list[dict[str, float]]:
    """``rounds`` of DAgger on ``net`` (in place), whose weights are in ``checkpoint`` (the first round's
    player; its env is the one played). Each round plays ``episodes`` new scenarios with the network
    fitted so far (written to ``save_to``, keeping ``checkpoint``'s env and extra records) and refits it
    for ``epochs`` on every round's turns; ``sizes`` is the critic's (M, K_max) as in cloning. Per round:
    its turns, the student's completion on them, the fit's statistics and seconds.

    ``anchor``, the teacher's own episodes (such as the warm start's), joins every refit, as the original
    DAgger aggregates its first data set: without it a refit on a few own-play scenarios drifts wherever
    they are few (docs/mara_policy.md, the fifty-ninth run). ``freeze`` names parts every refit holds fixed
    (:data:`~.frozen_parts.FROZEN_PARTS`); ``path_weights`` weighs the turns of each named rule in the cloning
    loss (:mod:`~.path_weighting`), and is checked before any play."""
    if rounds < 1 or episodes < 1 or epochs < 1:
        raise ValueError(f"rounds, episodes and epochs must be >= 1, got {rounds}, {episodes} and {epochs}")
    path_weights = check_path_weights(path_weights or {})
    _, env, extra = load_checkpoint(Path(checkpoint))
    player, parts, report = Path(checkpoint), [], []
    anchored = [] if anchor is None else [anchor]
    for index in range(rounds):
        began = time.perf_counter()
        seeds = action_seeds(index, episodes)
        parts.append(collect_demonstrations(env, teacher, seeds, jobs, progress, scenarios, student=player))
        every = Demonstrations.concatenate([*anchored, *parts])
        stats = clone(
            net, every, *sizes, epochs, learning_rate=learning_rate, seed=index, progress=progress,
            row_buckets=row_buckets, gate_coef=gate_coef, freeze=freeze, path_weights=path_weights,
        )  # fmt: skip
        player = save_checkpoint(net, save_to, env, {**extra, "action_dagger_rounds": index + 1})
        report.append({
            "round": index + 1, "turns": len(parts[-1]),
            "student_completion_rate": float(parts[-1].completion_rates.mean()),
            **{key: float(value) for key, value in stats.items()},
            "seconds": round(time.perf_counter() - began, 1),
        })  # fmt: skip
    return report
