"""A slot actor whose gate is replaced, slot by slot, by a rule's choice of skip path (a diagnostic).

A hinted slot actor mixes three skip paths (``srw``, ``edf``, ``uniform``) by a learned gate and adds its
learned scores. Where it trails a planner, the fault may lie in the gate (the wrong path for the slot) or
in the turns (the right path, overruled by the learned scores). Playing the same network with its gate
set each slot to the path a known rule follows tells the two apart: if this copy matches the rule's
planner, a gate that learned the rule would be enough.

The rule here is ``load_switch``'s (:mod:`~.teacher_rules`, the teacher of big ``tabular`` clusters):
``srw`` while the arrival rate is at most :data:`~.teacher_rules.LOAD_SWITCH_RATE`, then ``edf_uniform``'s
rule (``edf`` while the tasks fit the table, ``uniform`` once some wait). It reads only the observation,
so the copy is a scheduler like any other, but the rule was chosen for one corner, and the copy plays it
everywhere: judge it there (``benchmarks/generalisation.py --mara
mara_agents.mara.rule_gate:rule_gated_generalist --workloads tabular --sizes 32 64``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from mara_agents.mara.numpy_actor import SlotParts
from mara_agents.mara.scheduler import GENERALIST_CHECKPOINT, MARAScheduler
from mara_agents.mara.slot_network import SlotMARANet
from mara_agents.mara.teacher_rules import LOAD_SWITCH_RATE, LoadSwitchScheduler
from mara_env.observation import decode

# the gate's (srw weight, uniform weight) that puts all the weight on each path; edf has the rest
PINNED_GATE = {"srw": (1.0, 0.0), "edf": (0.0, 0.0), "uniform": (0.0, 1.0)}
_DEFAULT_RULE = LoadSwitchScheduler()  # at LOAD_SWITCH_RATE; only its stateless slot_path is asked of it


def load_switch_path(vector: np.ndarray, rule: LoadSwitchScheduler = _DEFAULT_RULE) -> str:
    """The skip path ``rule`` (``load_switch`` at its default rate unless given) follows in the slot of
    observation ``vector``."""
    return rule.slot_path(decode(vector))


class RuleGatedScheduler(MARAScheduler):
    """A :class:`MARAScheduler` of a hinted slot actor with the ``uniform`` path whose gate, at every slot,
    gives all the weight to the path :func:`load_switch_path` names (at the switch ``rate``); its learned
    scores are kept. Plays greedily (the decision is the numpy head's)."""

    def __init__(
        self, checkpoint: str | Path = GENERALIST_CHECKPOINT, seed: int | None = 0, rate: float = LOAD_SWITCH_RATE
    ) -> None:
        rule = LoadSwitchScheduler(rate=rate)  # refuses a bad rate before the checkpoint is read
        super().__init__(checkpoint, deterministic=True, seed=seed)
        config = getattr(self.net, "config", {})
        if not isinstance(self.net, SlotMARANet) or not (config.get("planner_hints") and config.get("uniform_pick")):
            raise ValueError(f"{checkpoint}: a rule can set the gate only of a slot actor with planner hints and the "
                             "uniform path (train_mara.py --generalist)")  # fmt: skip
        learned = self._encoder

        def encode(vector: np.ndarray) -> SlotParts:
            parts = learned(vector)
            parts.gate, parts.uniform_gate = PINNED_GATE[load_switch_path(vector, rule)]
            return parts

        self._encoder = encode


def rule_gated_generalist() -> RuleGatedScheduler:
    """The shipped generalist with its gate set by ``load_switch``'s rule (an agent spec for the benches)."""
    return RuleGatedScheduler()
