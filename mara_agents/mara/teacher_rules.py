"""Rules that label a corner of the generalist's scenarios and are not packaged schedulers.

A teacher candidate is usually a registered agent. A rule here is written for one corner only (it was
chosen on that corner's validation episodes and loses elsewhere), so it stays out of the registry and
out of the tables that compare every packaged scheduler; a teacher names it like an agent
(``load_switch~tabular,17-64,0.7``).

``load_switch``: on big ``tabular`` clusters ``srw`` leads at the ``train`` load and ``edf_uniform``
under overload, and the teacher that labelled each episode with its winner gave labels the policy could
not tell apart. This rule plays ``srw`` while the observation's ``arrival_rate`` (tasks arrived per
slot and node since the episode began) is at most :data:`LOAD_SWITCH_RATE`, ``edf_uniform`` beyond, so
its label is a function of what the policy sees. On validation episodes it was within noise of the
better planner in all six cells of ``tabular`` at 32 and 64 nodes and the three loads
(``benchmarks/planner_switch.py``, docs/results/planner_switch_rate.md); on the other workloads one
planner leads at every load, so it is no rule for them.
"""

from __future__ import annotations

import numpy as np

from mara_agents.base import ObservationScheduler
from mara_agents.heuristics import EDFUniformScheduler
from mara_agents.srw import SRWScheduler
from mara_env.observation import DecodedObservation

LOAD_SWITCH_RATE = 0.054  # tasks per slot and node; tabular's train load arrives below it, heavy above


class PlannerSwitchScheduler(ObservationScheduler):
    """``srw`` or ``edf_uniform``, chosen at each slot's first turn by :meth:`slot_planner` (a subclass's
    rule), since what a rule reads holds for the whole slot.

    While ``edf_uniform`` plays, ``srw`` keeps every row's history, should it take over later. ``last_path``
    names the rule of the latest decision (``"srw"``, or ``edf_uniform``'s ``"edf"`` or ``"uniform"``), so a
    teacher labels the policy's gate with it.
    """

    def reset(self, seed: int | None = None) -> None:
        super().reset(seed)
        self.srw, self.edf_uniform = SRWScheduler(seed=seed), EDFUniformScheduler(seed=seed)
        self.slot_time: float | None = None
        self.current = self.last_path = "srw"

    def slot_planner(self, obs: DecodedObservation) -> str:
        """The planner of a new slot, ``"srw"`` or ``"edf_uniform"``."""
        raise NotImplementedError

    def slot_path(self, obs: DecodedObservation) -> str:
        """The rule a slot starting at ``obs`` is played by, ``"srw"``, ``"edf"`` or ``"uniform"`` (no state
        changes: a diagnostic may ask it of any observation)."""
        return "srw" if self.slot_planner(obs) == "srw" else self.edf_uniform.path(obs)

    def planner(self, obs: DecodedObservation) -> str:
        """The planner this turn plays: :meth:`slot_planner`'s at a slot's first turn, kept for the slot."""
        if obs.globals["time"] != self.slot_time:
            self.slot_time = obs.globals["time"]
            self.current = self.slot_planner(obs)
        return self.current

    def choose(self, obs: DecodedObservation, allowed: np.ndarray) -> int | None:
        slot_starts = obs.globals["time"] != self.slot_time
        if self.planner(obs) == "srw":
            self.last_path = "srw"
            return self.srw.choose(obs, allowed)
        if slot_starts:
            self.srw.memory.update(obs)
        row = self.edf_uniform.choose(obs, allowed)
        self.last_path = self.edf_uniform.last_path
        return row


class LoadSwitchScheduler(PlannerSwitchScheduler):
    """``srw`` while the arrival rate is at most ``rate``, ``edf_uniform`` beyond; chosen per slot."""

    def __init__(self, seed: int | None = 0, rate: float = LOAD_SWITCH_RATE) -> None:
        if not (np.isfinite(rate) and rate > 0):
            raise ValueError(f"rate must be a finite number of tasks per slot and node, > 0; got {rate!r}")
        self.rate = float(rate)
        super().__init__(seed)

    def slot_planner(self, obs: DecodedObservation) -> str:
        return "srw" if obs.globals["arrival_rate"] <= self.rate else "edf_uniform"


# the rules a teacher may name as candidates, by name
TEACHER_RULES = {"load_switch": LoadSwitchScheduler}
