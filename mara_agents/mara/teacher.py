"""A privileged teacher for the MARA policy: a planner's action at every node turn.

The student (the MARA network) sees the env's ordinary observation, with the forecaster it is
trained on. The teacher reads the same env the student acts in, so it labels the states the student
actually visits (as DAgger does), and it never acts in evaluation: the shipped policy is the network
alone. When the teacher needs forecast features the env does not compute (``srw`` reads ``flow``
forecasts, ``oracle`` the true remaining work), it computes them itself and reads the observation with
its own forecast columns; so the forecaster ablations change what the student sees, not the teacher.

``srw`` is the default teacher. Cloning the clairvoyant ``oracle`` was tried and is worse: the student
cannot see what the oracle decides on (0.556 on 10 validation seeds against 0.688 for the srw clone).

``best`` (the generalist's teacher) is, episode by episode, whichever of ``srw`` and ``edf`` completes
more of that very episode: at its reset it plays both on the episode's settings and seed, then labels
with the winner (ties go to ``srw``). Neither planner leads everywhere (``edf`` wins on ``rl`` curves,
``srw`` at the ``train`` load on most others), so the student has to learn from the observation which
to follow; it never sees the teacher's choice.

``best_shared`` is ``best`` whose ``srw`` plans on the env's own forecasts (the student's), in its
choice and its labels, instead of on its own ``flow`` draws: the student's ``srw``-plan hints then
reproduce the teacher's plan exactly, so its labels are a function of what the student sees.

A ``best`` teacher may take more candidates than ``srw`` and ``edf``: ``best_shared+SPEC`` (``+`` joins
several) adds the agent ``SPEC`` (a registered name or ``NAME:CHECKPOINT``, as ``mara compare`` takes, or
a rule of :mod:`~mara_agents.mara.teacher_rules` such as ``load_switch``),
for instance an earlier MARA policy that leads the planners where it departs from them.
``SPEC@N`` makes it a candidate only on clusters of at most ``N`` nodes (where it is known to lead).
``SPEC~WORKLOAD,N,LOAD`` makes it the sole candidate of one corner of the scenarios: on ``WORKLOAD``
episodes with at least ``N`` nodes (``LO-HI``: from ``LO`` to ``HI`` nodes) and an offered load of at
least ``LOAD`` it labels alone (nothing else is played there), and elsewhere it is no candidate. It is
for a corner where a candidate leads on average but the episode-by-episode winner is close to a coin
toss, so labels by winner conflict.
``fifth_generalist``, ``ninth_generalist`` and ``thirtieth_generalist`` name earlier generalists shipped for
this (``weights/mara_generalist_fifth.pt`` and so on), so a teacher name, which checkpoints record, holds
no machine's path.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from mara_agents.base import requirements_of
from mara_agents.mara.gate_paths import GATE_PATHS
from mara_agents.mara.scheduler import (
    FIFTH_GENERALIST_CHECKPOINT,
    NINTH_GENERALIST_CHECKPOINT,
    THIRTIETH_GENERALIST_CHECKPOINT,
)
from mara_agents.mara.teacher_rules import TEACHER_RULES
from mara_env import forecast
from mara_env.config import DEFAULTS
from mara_env.env import live_turns, raw_env
from mara_env.forecast.features import ForecastFeatures
from mara_env.observation import layout_of
from mara_env.workloads import WORKLOADS, resolve_load

TEACHERS = ("oracle", "srw", "lara", "best", "best_shared")
BEST_TEACHERS = ("best", "best_shared")
BEST_OF = ("srw", "edf")  # the candidates of the ``best`` teacher, ties to the first
CANDIDATE_ALIASES = {
    "fifth_generalist": f"mara_generalist:{FIFTH_GENERALIST_CHECKPOINT}",
    "ninth_generalist": f"mara_generalist:{NINTH_GENERALIST_CHECKPOINT}",
    "thirtieth_generalist": f"mara_generalist:{THIRTIETH_GENERALIST_CHECKPOINT}",
}
# The default --generalist run's teacher (examples/train_mara.py). srw plans on the student's own
# flow_fixed forecasts: its labels are then a function of the observation; with pick hints the clone
# agrees with it on 99.7% of turns. More candidates: uniform (it leads rl at heavy loads), the fifth
# generalist up to 16 nodes (it leads both planners at 4-8 nodes; at 32-64 nodes as a candidate it cost
# 5 points), and two later generalists at any size, the ninth run's and the thirtieth's (the teacher then
# completes 0.486 of its episodes against 0.465 without them), then edf_uniform: a candidate everywhere
# and the sole teacher of rl at every size and of tabular on up to 16 nodes (from load 0.7, the lowest the
# generalist trains at), where it plays edf until a task waits for a row and uniform beyond, so the gate's
# label follows the table's fill, which the policy observes (docs/mara_policy.md, the thirty-second,
# forty-third and forty-fifth runs).
GENERALIST_TEACHER = (
    "best_shared+uniform+fifth_generalist@16+ninth_generalist+thirtieth_generalist+edf_uniform"
    "+edf_uniform~rl,2,0.7+edf_uniform~tabular,2-16,0.7"
)


def candidate_name(spec: str) -> str:
    """The short name of a candidate spec for reports: its alias (``fifth_generalist``) if it has one, so a
    report holds no machine's path, else the spec itself."""
    for alias, full in CANDIDATE_ALIASES.items():
        if spec == full:
            return alias
    return spec


def parse_teacher(name: str) -> tuple[str, tuple[str, ...]]:
    """``(teacher, candidates)`` of a teacher name: ``best_shared+SPEC`` adds candidate agents to ``BEST_OF``.

    ``ValueError`` for an unknown teacher, candidates on a teacher that is not a ``best`` one, or a
    candidate spec that names no agent (a missing checkpoint, an unknown name).
    """
    from mara_agents.registry import check_spec

    base, *extra = str(name).split("+")
    if base not in TEACHERS:
        raise ValueError(f"teacher must be one of {list(TEACHERS)} (a best one may add +AGENT), got {name!r}")
    if extra and base not in BEST_TEACHERS:
        raise ValueError(f"only {list(BEST_TEACHERS)} take extra candidates (+AGENT), got {name!r}")
    for spec in extra:
        agent = split_gate(split_corner(spec)[0])[0]
        if agent not in TEACHER_RULES:
            check_spec(agent)
    return base, BEST_OF + tuple(extra)


@dataclass(frozen=True)
class Corner:
    """Where a ``SPEC~WORKLOAD,N,LOAD`` candidate labels alone: ``workload`` episodes on at least
    ``min_nodes`` nodes (and at most ``max_nodes``, ``None``: no upper bound) at an offered load of at
    least ``min_load``."""

    workload: str
    min_nodes: int
    min_load: float
    max_nodes: int | None = None

    @classmethod
    def parse(cls, text: str, candidate: str) -> Corner:
        """The corner ``WORKLOAD,N,LOAD`` (``N`` may be a range ``LO-HI``) of ``candidate``; ``ValueError``
        naming what is wrong and allowed."""
        parts = text.split(",")
        allowed = (
            "after '~' give WORKLOAD,N,LOAD (a registered workload, nodes >= 1 or a range LO-HI with "
            "1 <= LO <= HI, a load > 0), e.g. rl,24,2.1 or tabular,2-16,0.7"
        )
        if len(parts) != 3:
            raise ValueError(f"candidate {candidate!r}: {allowed}")
        workload, nodes, load = parts
        if workload not in WORKLOADS:
            raise ValueError(f"candidate {candidate!r}: workload {workload!r} is not registered: {sorted(WORKLOADS)}")
        try:
            (min_nodes, max_nodes), min_load = parse_node_range(nodes), float(load)
        except ValueError:
            raise ValueError(f"candidate {candidate!r}: {allowed}") from None
        if not (min_load > 0 and math.isfinite(min_load)):
            raise ValueError(f"candidate {candidate!r}: {allowed}")
        return cls(workload, min_nodes, min_load, max_nodes)

    def holds(self, settings: dict) -> bool:
        """Whether the env with ``settings`` lies in this corner."""
        nodes = settings.get("num_nodes", DEFAULTS.num_nodes)
        return (
            settings.get("workload", DEFAULTS.workload) == self.workload
            and self.min_nodes <= nodes
            and (self.max_nodes is None or nodes <= self.max_nodes)
            and resolve_load(settings.get("load", DEFAULTS.load)) >= self.min_load
        )


def parse_node_range(text: str) -> tuple[int, int | None]:
    """``N`` (at least ``N`` nodes) as ``(N, None)`` or ``LO-HI`` as ``(LO, HI)``; ``ValueError`` unless
    ``1 <= LO <= HI``."""
    low, dash, high = text.partition("-")
    bounds = int(low), (int(high) if dash else None)
    if bounds[0] < 1 or (bounds[1] is not None and bounds[1] < bounds[0]):
        raise ValueError(f"nodes must be N >= 1 or a range LO-HI with 1 <= LO <= HI, got {text!r}")
    return bounds


def split_corner(candidate: str) -> tuple[str, Corner | None]:
    """``(candidate spec, corner)`` of ``SPEC~WORKLOAD,N,LOAD`` (``None``: an ordinary candidate)."""
    spec, tilde, where = candidate.partition("~")
    if not tilde:
        return candidate, None
    if split_gate(spec)[1] is not None:
        raise ValueError(f"candidate {candidate!r}: a corner's sole candidate takes no '@N' (its corner sets sizes)")
    return spec, Corner.parse(where, candidate)


def split_gate(candidate: str) -> tuple[str, int | None]:
    """``(agent spec, most nodes)`` of a candidate ``SPEC`` or ``SPEC@N`` (``None``: any cluster size); an
    alias (one of ``CANDIDATE_ALIASES``) becomes the spec it stands for. ``SPEC`` may end with ``@FORECASTER``.

    ``ValueError`` when what follows the last ``@`` is not a whole number of nodes >= 1.
    """
    spec, at, gate = candidate.rpartition("@")
    if not at or gate in forecast.FORECASTERS:  # SPEC@FORECASTER is an agent spec (any cluster size)
        spec, gate = candidate, None
    elif not gate.isdigit() or int(gate) < 1:
        raise ValueError(f"candidate {candidate!r}: after '@' give the most nodes it plays on (a whole number >= 1)")
    return CANDIDATE_ALIASES.get(spec, spec), None if gate is None else int(gate)


def load_candidate(spec: str):
    """The scheduler a candidate ``spec`` names: a rule of :data:`TEACHER_RULES` or a registered agent."""
    from mara_agents.registry import load_agent

    return TEACHER_RULES[spec]() if spec in TEACHER_RULES else load_agent(spec)


class Teacher:
    """Labels node turns of one env copy with a planner's action.

    Parameters
    ----------
    name:
        ``srw`` (the default), ``lara`` or ``oracle`` (true remaining work).
    max_tasks:
        ``K_max`` of the env it labels.
    env_forecaster:
        The forecaster of the env it labels; the teacher brings its own when it needs another.
    env_kwargs:
        The settings of the env it labels (``best`` plays its candidates on them at every reset).
    """

    def __init__(
        self,
        name: str = "srw",
        max_tasks: int = DEFAULTS.max_tasks,
        env_forecaster: str | None = DEFAULTS.forecaster,
        env_kwargs: dict | None = None,
    ) -> None:
        name, candidates = parse_teacher(name)
        # the sole candidates of a corner apart from those played against each other
        split = [(spec, split_corner(spec)) for spec in candidates]
        self.candidates = tuple(spec for spec, (_, corner) in split if corner is None)
        self.corners = tuple(parts for _, parts in split if parts[1] is not None)
        if name in BEST_TEACHERS and env_kwargs is None:
            raise ValueError("the 'best' teacher plays its candidates on the env's settings: pass env_kwargs")
        self.name, self.max_tasks, self.env_forecaster = name, max_tasks, env_forecaster
        self.env_kwargs = env_kwargs
        self.shared = name == "best_shared" and env_forecaster not in (None, "none")
        self._use(BEST_OF[0] if name in BEST_TEACHERS else name)

    def _use(self, name: str, scheduler=None) -> None:
        """Label with the agent ``name`` (bringing its own forecasts if the env's are not the ones it reads);
        ``scheduler`` is that agent already built (the ``best`` teacher's winner), else it is loaded."""
        self.chosen = name
        self.episode_rates: tuple[float, ...] | None = None  # each candidate's rate on this episode (best only)
        self.scheduler = load_candidate(name) if scheduler is None else scheduler
        wanted = self._forecaster_for(self.scheduler)
        own = wanted is not None and wanted != self.env_forecaster
        self._truth = ForecastFeatures(forecast.make(wanted), self.max_tasks) if own else None
        self._slot = -1
        self._features: np.ndarray | None = None

    def _forecaster_for(self, scheduler) -> str | None:
        """The forecaster whose columns ``scheduler`` reads as this teacher (``None``: it reads none).

        One that names its own keeps it (``oracle``: the true remaining work; a MARA policy: the one it
        was trained on); one that reads the default (``srw``) reads the env's own under ``best_shared``.
        """
        needs = requirements_of(scheduler)
        if needs.forecaster is not None:
            return needs.forecaster
        if not needs.reads_forecasts:
            return None
        return self.env_forecaster if self.shared else DEFAULTS.forecaster

    @classmethod
    def for_env(cls, name: str, env_kwargs: dict) -> Teacher:
        """A teacher for envs built with ``raw_env(**env_kwargs)``."""
        max_tasks = env_kwargs.get("max_tasks", DEFAULTS.max_tasks)
        return cls(name, max_tasks, env_kwargs.get("forecaster", DEFAULTS.forecaster), env_kwargs)

    def reset(self, seed: int | None = None) -> None:
        if self.name in BEST_TEACHERS and (sole := self.sole_candidate()) is not None:
            self._use(sole)  # nothing else is played: no episode rates
        elif self.name in BEST_TEACHERS:
            played = self.play_candidates(seed)
            name, _, scheduler = played[int(np.argmax([rate for _, rate, _ in played]))]  # ties to the first
            self._use(name, scheduler)
            rates = {name: rate for name, rate, _ in played}  # NaN: a candidate gated out at this size
            self.episode_rates = tuple(rates.get(split_gate(spec)[0], float("nan")) for spec in self.candidates)
        self.scheduler.reset(seed)
        if self._truth is not None:
            self._truth.reset()
        self._slot = -1

    def sole_candidate(self) -> str | None:
        """The agent spec that labels this env alone (the first corner it lies in), or ``None``."""
        for spec, corner in self.corners:
            if corner.holds(self.env_kwargs):
                return split_gate(spec)[0]
        return None

    def play_candidates(self, seed: int | None) -> list[tuple[str, float, object]]:
        """``(name, completion rate, scheduler)`` of each candidate on this cluster (a gated one is skipped
        above its size) after playing the episode with ``seed`` on the env's settings, unshaped. The
        winner labels the episode; its scheduler is reset before it does (a MARA one is not loaded twice)."""
        from mara_agents.evaluation import env_config

        # each candidate on the env it asks for (edf: no forecasts; srw: flow, as it labels), same episode
        settings = {key: value for key, value in self.env_kwargs.items() if key != "forecaster"}
        nodes = settings.get("num_nodes", DEFAULTS.num_nodes)
        played = []
        for name, most in map(split_gate, self.candidates):
            if most is not None and nodes > most:
                continue
            player = load_candidate(name)
            config = env_config(player, {**settings, "shaping": False})
            if (wanted := self._forecaster_for(player)) is not None:
                config["forecaster"] = wanted  # the forecasts it labels with
            env = raw_env(**config)
            env.reset(seed=seed)
            player.reset(seed)
            for agent in live_turns(env):
                env.step(player.act(env.observe(agent), agent))
            played.append((name, env.sim.metrics()["completion_rate"], player))
        return played

    def path(self) -> int:
        """The index in ``GATE_PATHS`` of the planner a ``best`` teacher labels the latest turn with, -1 when
        it is another candidate (a MARA policy) or the teacher is not a ``best`` one (its labels then say
        nothing of which planner won). A candidate that switches rules within an episode (``edf_uniform``)
        names the rule of its latest decision in ``last_path``, so its label follows the state it saw."""
        if self.name not in BEST_TEACHERS:
            return -1
        planner = getattr(self.scheduler, "last_path", self.chosen)
        return GATE_PATHS.index(planner) if planner in GATE_PATHS else -1

    def action(self, env: raw_env, observation: dict) -> int:
        """The teacher's action for the node whose ``observation`` this is (the env's acting agent)."""
        vector = observation["observation"]
        if self._truth is not None:
            vector = self._with_truth(env, vector)
        return int(self.scheduler.act({"observation": vector, "action_mask": observation["action_mask"]}, ""))

    def play_until(self, env: raw_env, slot: int) -> None:
        """Play every turn of ``env`` with this teacher's actions until the env reaches ``slot``.

        Scenario warm-ups use it: the learner takes over a big cluster whose queues have filled.
        """
        for agent in live_turns(env):
            if env.sim.slot >= slot:
                return
            env.step(self.action(env, env.observe(agent)))

    def _with_truth(self, env: raw_env, vector: np.ndarray) -> np.ndarray:
        """A copy of ``vector`` whose forecast columns are the teacher's own."""
        if env.sim.slot != self._slot:  # the truth changes once per slot, like the forecasts
            self._features, self._slot = self._truth.features(env.sim), env.sim.slot
        return layout_of(vector).with_forecasts(vector, self._features)
