"""The split step: after the rule-gate step, clusters of at least ``RULE_MIN_NODES`` nodes get a gate of
their own, taught on big ``tabular``, ``rl`` and ``mixed``, while smaller clusters keep the gate of the
step's copy with the rule read on big clusters only.

Why: the rule-gate step (:mod:`~.rule_gate_refit`) levels big ``tabular`` under overload, but taught
there its gate moved small clusters too (8-node ``tabular`` by a few tenths), and taught the rule's
``srw`` slots it leaned big ``rl`` to ``srw`` (docs/mara_policy.md, sessions 57-62). Here, from the
step's player (``rule_gate_player.pt``) and its labels, with no new play but one:

1. **Limited** (:data:`LIMITED_CORNERS`): the player's gate reads the rule on big clusters only
   (``input_grafts.rule_on_big_clusters``) and is refitted as the step's is, on its ``edf`` and
   ``uniform`` slots of big ``tabular``.
2. **First split** (:data:`FIRST_CORNERS`): the limited network's big clusters get a copy of its gate
   (``input_grafts.split_gate``), the only part fitted, taught big ``tabular`` and big ``rl`` (at ten
   times the weight, so it stays with ``rl``'s teacher, which never names ``srw``).
3. **Play on big rl** (:data:`BIG_RL_FOCUS`): the first split plays big ``rl`` scenarios, labelled by the
   step's teacher: its own states, where the step's labels missed how far it leans to ``srw``.
4. **The split** (:data:`SPLIT_CORNERS`): the limited network split again and fitted on both label sets,
   big ``mixed`` taught too (held, its few slots followed what the taught corners play).
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

from mara_agents.mara.checkpoint import load_checkpoint, save_checkpoint
from mara_agents.mara.context_features import RULE_MIN_NODES
from mara_agents.mara.gate_dagger import Corner, GateLabels, gate_seeds, label_own_play, refit_on_labels
from mara_agents.mara.input_grafts import rule_on_big_clusters, split_gate
from mara_agents.mara.rule_gate_refit import RULE_CORNER, RULE_FIT_STEPS, RULE_PLAYS, rule_teacher
from mara_agents.mara.scenarios import ScenarioFocus, ScenarioSampler
from mara_agents.mara.slot_network import SlotMARANet

LIMITED_CORNERS = (RULE_CORNER,)  # taught on its edf and uniform slots only, as the rule-gate step is
FIRST_CORNERS = (RULE_CORNER, Corner("rl", RULE_MIN_NODES, 64, 10.0))
SPLIT_CORNERS = (*FIRST_CORNERS, Corner("mixed", RULE_MIN_NODES, 64, 10.0))
BIG_RL_FOCUS = ScenarioFocus("rl", min_nodes=RULE_MIN_NODES, loads=(0.7, 3.5), share=1.0)
BIG_RL_EPISODES = 150  # scenarios of the play on big rl
BIG_RL_FIRST_EPISODE = sum(play.episodes for play in RULE_PLAYS)  # gate scenarios after the step's own
# what the step writes beside its result: each part's network and the play's labels
LIMITED_FILE, FIRST_FILE, PLAY_LABELS_FILE = "split_limited.pt", "split_first.pt", "split_big_rl_labels.npz"


def split_step(
    player: Path,
    step_labels: Path,
    env: dict,
    teacher: str,
    sampler: ScenarioSampler,
    out: Path,
    jobs: int = 2,
    progress: bool = True,
) -> tuple[SlotMARANet, list[dict]]:
    """The split network made from the rule-gate step's ``player`` checkpoint and ``step_labels``
    (``env``, ``teacher`` and ``sampler``: the run's); per part its statistics and seconds. Each part's
    network and the play's labels are written into ``out`` (``LIMITED_FILE``, ``FIRST_FILE``,
    ``PLAY_LABELS_FILE``). ``ValueError`` (before any fit, with nothing written) for scenarios that cannot
    reach big clusters, a player that cannot take the limit, or labels its gate cannot be fitted on."""
    on_big_rl = dataclasses.replace(sampler, focus=BIG_RL_FOCUS)  # refused here, before any fit, if it cannot
    labels = GateLabels.load(step_labels)
    net, saved_env, extra = load_checkpoint(Path(player))
    labels.check_for(net)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    report: list[dict] = []

    def fitted(name: str, base: SlotMARANet, parts: GateLabels, corners: tuple[Corner, ...], **how) -> SlotMARANet:
        began = time.perf_counter()
        stats = refit_on_labels(base, parts, corners, steps=RULE_FIT_STEPS, **how)
        report.append({"part": name, **stats, "seconds": round(time.perf_counter() - began, 1)})
        return base

    limited = fitted("limited", rule_on_big_clusters(net), labels, LIMITED_CORNERS, planners_only=True)
    save_checkpoint(limited, out / LIMITED_FILE, saved_env, {**extra, "split_step": "limited"})
    first = fitted("first split", split_gate(limited), labels, FIRST_CORNERS, big_only=True)  # a copy: limited stays
    first_path = save_checkpoint(first, out / FIRST_FILE, saved_env, {**extra, "split_step": "first"})
    began, seeds = time.perf_counter(), gate_seeds(BIG_RL_FIRST_EPISODE, BIG_RL_EPISODES)
    played = label_own_play(first_path, env, rule_teacher(teacher), seeds, on_big_rl, jobs, progress)
    played.save(out / PLAY_LABELS_FILE)
    report.append({"part": "play on big rl", "episodes": BIG_RL_EPISODES, "slots": len(played),
                   "seconds": round(time.perf_counter() - began, 1)})  # fmt: skip
    both = GateLabels.concatenate([labels, played])
    return fitted("split", split_gate(limited), both, SPLIT_CORNERS, big_only=True), report
