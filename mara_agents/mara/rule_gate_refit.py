"""The rule-gate refit: a generalist's gate taught to follow ``load_switch``'s rule on big ``tabular``
clusters by reading the rule's choice, and held to its own weights everywhere else.

Why: a gate set each slot to the path ``load_switch`` names (``rule_gate.py``) levelled every big
``tabular`` cell where the learned gates lost, while gates refitted on the rule's labels missed it on
states they never saw and moved small clusters too (docs/mara_policy.md). Here the gate reads the rule's
path (``input_grafts.graft_gate_rule``, at weight 0, so the copy first plays as the original) and a
refit on the policy's own play has to learn only where to follow it:

1. **Label** four sets of the copy's own play (:data:`RULE_PLAYS`), the teacher with ``load_switch``
   alone on the corner (:data:`RULE_TEACHER`): big ``tabular`` scenarios from their first slot (no
   warm-up, so the slots a warm-up would play are labelled too), the same after a warm-up, the
   training distribution, and the training distribution from the first slot. The last holds the gate
   on the first slots of other big clusters: without it the gate followed the rule on a third of big
   ``rl`` clusters' first slots and lost 1.8-1.9 points at the ``train`` load there. Each set plays gate
   scenarios of its own (``gate_dagger.gate_seeds``).
2. **Fit** the gate on all of them, the teacher's labels kept only on the corner's slots where the rule
   plays ``edf`` or ``uniform`` (:data:`RULE_CORNER`); every other slot is labelled with the copy's own
   weights, which the fit holds (``gate_dagger.keep_own_gate`` with ``planners_only``). Taught its ``srw``
   slots too, the gate learnt to lean to ``srw`` wherever the rule names it, big ``rl`` clusters
   included, whose teacher is ``edf_uniform`` at every load: 2.7 points lost at the ``train`` load on 64
   nodes. Its ``edf`` and ``uniform`` slots are where the shipped gate lost; there ``rl``'s teacher agrees
   with the rule.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from pathlib import Path

from mara_agents.mara.checkpoint import save_checkpoint
from mara_agents.mara.context_features import RULE_MIN_NODES
from mara_agents.mara.gate_dagger import Corner, GateLabels, fit_gate, gate_seeds, keep_own_gate, label_own_play
from mara_agents.mara.input_grafts import graft_gate_rule
from mara_agents.mara.scenarios import ScenarioFocus, ScenarioSampler
from mara_agents.mara.slot_network import SlotMARANet

RULE_TEACHER = f"load_switch~tabular,{RULE_MIN_NODES}-64,0.7"  # the teacher's candidate that labels the corner alone
RULE_CORNER = Corner("tabular", RULE_MIN_NODES, 64)  # where the teacher's labels are kept: tabular on 17 to 64 nodes
RULE_FOCUS = ScenarioFocus("tabular", min_nodes=RULE_MIN_NODES, loads=(0.7, 3.5), share=0.9)  # the plays' corner
RULE_FIT_STEPS = 2000  # full-batch Adam steps of the fit (72,781 slots: about a minute on 2 cores)


@dataclass(frozen=True)
class LabelPlay:
    """One set of own-play labels: ``episodes`` gate scenarios from the ``first_episode``-th on."""

    name: str
    episodes: int
    first_episode: int
    warmup: bool  # big clusters start after a planner's warm-up (False: the learner plays from slot 0)
    focused: bool  # most scenarios drawn from RULE_FOCUS (False: the training distribution)


RULE_PLAYS = (
    LabelPlay("first_slots", 150, 0, warmup=False, focused=True),
    LabelPlay("after_warmup", 150, 150, warmup=True, focused=True),
    LabelPlay("everywhere", 300, 300, warmup=True, focused=False),
    LabelPlay("first_slots_everywhere", 300, 600, warmup=False, focused=False),
)


def rule_teacher(teacher: str) -> str:
    """``teacher`` with :data:`RULE_TEACHER` among its candidates (added once)."""
    return teacher if RULE_TEACHER in teacher.split("+") else f"{teacher}+{RULE_TEACHER}"


def play_sampler(sampler: ScenarioSampler, play: LabelPlay) -> ScenarioSampler:
    """The scenarios ``play`` draws: ``sampler``'s, with the focus on the corner and without a warm-up
    where ``play`` asks."""
    fields: dict = {"focus": RULE_FOCUS} if play.focused else {}
    if not play.warmup:
        fields.update(warmup=False, mixed_warmup=False, random_window=False)
    return dataclasses.replace(sampler, **fields)


def check_rule_plays(sampler: ScenarioSampler | None) -> None:
    """``ValueError`` (before any work) unless every play of :data:`RULE_PLAYS` can draw from ``sampler``: it
    must exist and draw clusters as big as the corner's."""
    if sampler is None:
        raise ValueError("the rule gate's plays draw scenarios: they need a scenario sampler (--generalist)")
    for play in RULE_PLAYS:
        try:
            play_sampler(sampler, play)
        except ValueError as error:
            raise ValueError(f"the rule gate's {play.name} play cannot draw these scenarios: {error}") from None


def rule_gate_refit(
    net: SlotMARANet,
    env: dict,
    teacher: str,
    sampler: ScenarioSampler,
    out: Path,
    jobs: int = 2,
    progress: bool = True,
    plays: tuple[LabelPlay, ...] = RULE_PLAYS,
    steps: int = RULE_FIT_STEPS,
) -> tuple[SlotMARANet, GateLabels, list[dict]]:
    """The copy of ``net`` that reads the rule, its gate refitted on :data:`RULE_PLAYS` (``env``: the
    run's env settings; ``teacher``: its best teacher, :func:`rule_teacher` adds the rule); the labels;
    per play its slots and seconds, then the fit's statistics. The copy before the fit is saved as
    ``out/rule_gate_player.pt`` (every play's player). ``ValueError`` for a network that cannot read the
    rule (no planner hints, a selector, the rule already)."""
    grafted = graft_gate_rule(net)
    player = save_checkpoint(grafted, Path(out) / "rule_gate_player.pt", env, {"rule_gate": "player"})
    parts, report = [], []
    for play in plays:
        began, seeds = time.perf_counter(), gate_seeds(play.first_episode, play.episodes)
        labels = label_own_play(player, env, rule_teacher(teacher), seeds, play_sampler(sampler, play), jobs, progress)
        parts.append(labels)
        seconds = round(time.perf_counter() - began, 1)
        report.append({"play": play.name, "episodes": play.episodes, "slots": len(labels), "seconds": seconds})
    began, every = time.perf_counter(), GateLabels.concatenate(parts)
    stats = fit_gate(grafted, keep_own_gate(grafted, every, [RULE_CORNER], planners_only=True), steps)
    seconds = round(time.perf_counter() - began, 1)
    report.append({"fit": f"taught on {RULE_CORNER}, planners only", "slots": len(every), **stats, "seconds": seconds})
    return grafted, every, report
