"""Training scenarios for a generalist MARA policy: a distribution over clusters and workloads.

A :class:`ScenarioSampler` draws the env settings of one training episode: the cluster size ``M``,
the table size ``K_max``, the workload, the load (from light to beyond ``extreme``), the arrival
process (Poisson, bursty, diurnal), sometimes heterogeneous node speeds and sometimes node faults.
The horizon shrinks as ``M`` grows so that an episode stays near ``turns_per_episode`` node turns
(big clusters would otherwise take most of the training time), or, with ``warmup``, every episode
runs the full horizon and a planner plays its first slots, so the learner meets big clusters after
their queues have filled. Observations of every scenario are
padded to ``max_tasks_cap`` rows (and states to ``max_nodes`` nodes) by the rollout workers, so they
stack into one batch; the padded vectors mean the same as the originals
(:meth:`mara_env.observation.ObservationLayout.padded`).

Training on scenarios draws every episode seed (rollout copies, and warm-start demonstrations from
``TRAINING_SEED_BASE + 500,000,000``) from :data:`TRAINING_SEED_BASE` up, which no evaluation uses:
benchmarks play seeds from 0 and validation seeds start at :data:`VALIDATION_SEED` (10,000,000), far below it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from mara_env.config import DEFAULTS
from mara_env.observation import layout_of
from mara_env.workloads import WORKLOADS

TRAINING_SEED_BASE = 1_000_000_000
# The first validation seed: checkpoint selection and the probes play from here; no training episode
# (from TRAINING_SEED_BASE up) and no table (from 0) plays it.
VALIDATION_SEED = 10_000_000
# The default --generalist run's largest table (examples/train_mara.py): big clusters draw up to 128 rows,
# as the 64-node test grid has; row buckets keep that affordable (the whole run takes 41.8 minutes on 2
# cores; the eleventh run, on 128 rows without them, took 75.7 minutes for half the PPO iterations).
GENERALIST_MAX_ROWS = 128


def check_load_range(loads: tuple[float, float], what: str) -> None:
    """``ValueError`` naming ``what`` unless ``loads`` is a range ``0 < low <= high`` (NaN fails it)."""
    if not 0 < loads[0] <= loads[1]:
        raise ValueError(f"{what} must be a range of numbers > 0, got {loads}")


@dataclass(frozen=True)
class ScenarioFocus:
    """A corner of the scenario space that a ``share`` of the training episodes is drawn from: the
    ``workload`` on clusters of at least ``min_nodes`` nodes at an offered load drawn uniformly in
    ``loads``; everything else (rows, arrivals, speeds, faults) is drawn as for any scenario.

    What it is for: a kind of scenario that is rare in the full distribution (``rl`` under overload on
    big clusters is about 1.4% of the episodes) and where a policy trails a planner.
    """

    workload: str
    min_nodes: int
    loads: tuple[float, float]
    share: float

    def __post_init__(self) -> None:
        if self.workload not in WORKLOADS:
            raise ValueError(f"focus workload {self.workload!r} is not registered; registered: {sorted(WORKLOADS)}")
        check_load_range(self.loads, "focus loads")
        if not 0 < self.share <= 1:
            raise ValueError(f"focus share must be in (0, 1], got {self.share}")


def focus_from_record(record: dict) -> ScenarioFocus:
    """The focus a run recorded (JSON turned its ``loads`` tuple into a list)."""
    return ScenarioFocus(**{**record, "loads": tuple(record["loads"])})


@dataclass(frozen=True)
class ScenarioSampler:
    """A distribution of env settings; :meth:`sample` draws one scenario.

    Parameters
    ----------
    nodes:
        ``M`` is drawn log-uniformly in this range (inclusive).
    max_tasks_cap:
        The largest ``K_max`` drawn (and the size observations are padded to).
    rows_per_node:
        ``K_max`` is drawn log-uniformly between ``rows_per_node[0] * M`` and ``rows_per_node[1] * M``,
        clipped to ``[8, max_tasks_cap]``.
    workloads:
        Workload names (``None``: every registered workload).
    loads:
        Offered load drawn uniformly in this range (``train`` is 1.4, ``extreme`` 2.8).
    arrivals:
        Arrival processes, drawn uniformly.
    hetero_share, fault_share:
        Shares of episodes with log-normal node speeds (sigma 0.4, clipped to [0.25, 4]) and with
        node faults (``mtbf`` drawn in [100, 1000] slots, ``mttr`` in [5, 30]).
    turns_per_episode, horizon:
        The horizon is ``turns_per_episode / M`` slots, clipped to ``horizon``.
    warmup:
        Instead of shortening big clusters' episodes, play every episode for ``horizon[1]`` slots and
        have a planner play its first slots (:meth:`warmup_slots`), so that the learner's
        ``turns_per_episode`` turns come from the end of the episode. Short episodes never fill the
        cluster: at 64 nodes and 60 slots every planner completes nearly every task, so the learner
        (and the ``best`` teacher's choice of planner) never met a congested big cluster.
    mixed_warmup:
        With ``warmup``, the warm-up slots are played by a planner drawn from the episode's seed
        (:func:`mara_agents.mara.warmup.warmup_planner`) instead of the episode's teacher, so that the
        state the learner takes over does not tell which candidate labels the episode.
    random_window:
        With ``warmup``, the learner's ``turns_per_episode / M`` slots start at a slot drawn from the
        episode's seed instead of at the end, and the episode is cut where they end, its rest valued by
        the critic (:func:`mara_agents.mara.warmup.learner_window`): big clusters are then trained at
        every time of an episode, not only at its end.
    fixed:
        Env settings every scenario shares (``shaping``, ``forecaster``, ``curve_split``, ...).
    focus:
        A :class:`ScenarioFocus` that a share of the episodes is drawn from (``None``: none, and the
        draws are exactly those of a sampler without the field).
    more_foci:
        Further foci, each with its own share of the episodes (the shares of all foci add up to at most
        1). One uniform draw picks the focus of an episode, ``focus`` first, so a sampler without
        ``more_foci`` draws exactly as before the field existed.
    """

    nodes: tuple[int, int] = (2, 64)
    max_tasks_cap: int = 64
    rows_per_node: tuple[float, float] = (1.0, 4.0)
    workloads: tuple[str, ...] | None = None
    loads: tuple[float, float] = (0.7, 3.5)
    arrivals: tuple[str, ...] = ("poisson", "bursty", "diurnal")
    hetero_share: float = 0.3
    fault_share: float = 0.2
    turns_per_episode: int = 2400
    horizon: tuple[int, int] = (60, 300)
    warmup: bool = False
    mixed_warmup: bool = False
    random_window: bool = False
    fixed: dict = field(default_factory=lambda: {"shaping": True, "forecaster": "flow", "curve_split": "train"})
    focus: ScenarioFocus | None = None
    more_foci: tuple[ScenarioFocus, ...] = ()

    def __post_init__(self) -> None:
        low, high = self.nodes
        if not (isinstance(low, int) and isinstance(high, int) and 1 <= low <= high <= self.max_tasks_cap):
            raise ValueError(
                f"nodes must be integers 1 <= low <= high <= max_tasks_cap ({self.max_tasks_cap}: at least one "
                f"row per node), got nodes={self.nodes}"
            )
        check_load_range(self.loads, "loads")
        unknown = sorted(set(self.workloads or ()) - set(WORKLOADS))
        if unknown:
            raise ValueError(f"unknown workloads {unknown}; registered: {sorted(WORKLOADS)}")
        if (self.mixed_warmup or self.random_window) and not self.warmup:
            raise ValueError("mixed_warmup and random_window shape the warm-up: they need warmup=True")
        for focus in self.foci:
            if not low <= focus.min_nodes <= high:
                raise ValueError(f"focus min_nodes must be within nodes {self.nodes}, got {focus.min_nodes}")
        if sum(focus.share for focus in self.foci) > 1.0 + 1e-9:
            raise ValueError(f"the foci's shares add up to more than 1: {[focus.share for focus in self.foci]}")

    @classmethod
    def from_record(cls, record: dict) -> ScenarioSampler:
        """The sampler a run recorded (``dataclasses.asdict`` of one, as a checkpoint's config holds it:
        JSON turned its tuples into lists)."""
        fields = dict(record)
        for name in ("nodes", "rows_per_node", "loads", "arrivals", "workloads", "horizon"):
            if fields.get(name) is not None:
                fields[name] = tuple(fields[name])
        if fields.get("focus") is not None:
            fields["focus"] = focus_from_record(fields["focus"])
        fields["more_foci"] = tuple(map(focus_from_record, fields.get("more_foci") or ()))
        return cls(**fields)

    @property
    def foci(self) -> tuple[ScenarioFocus, ...]:
        """Every focus, ``focus`` first."""
        return ((self.focus,) if self.focus is not None else ()) + self.more_foci

    def draw_focus(self, rng: np.random.Generator) -> ScenarioFocus | None:
        """The focus of the next episode (``None``: an ordinary one); draws once, and only with a focus."""
        if not self.foci:
            return None
        draw, reached = rng.random(), 0.0
        for focus in self.foci:
            reached += focus.share
            if draw < reached:
                return focus
        return None

    @property
    def max_nodes(self) -> int:
        """The largest ``M`` drawn (the size states are padded to)."""
        return self.nodes[1]

    def sample(self, rng: np.random.Generator) -> dict:
        """The ``raw_env`` settings of one scenario."""
        focus = self.draw_focus(rng)
        smallest = focus.min_nodes if focus is not None else self.nodes[0]
        m = int(round(math.exp(rng.uniform(math.log(smallest), math.log(self.nodes[1] + 0.5) - 1e-9))))
        m = min(max(m, smallest), self.nodes[1])
        low, high = self.rows_per_node
        k = int(round(m * math.exp(rng.uniform(math.log(low), math.log(high)))))
        k = min(max(k, 8), self.max_tasks_cap)
        workloads = self.workloads or tuple(sorted(WORKLOADS))
        settings = {
            **self.fixed,
            "num_nodes": m,
            "max_tasks": k,
            "horizon": self.horizon[1] if self.warmup else int(np.clip(self.turns_per_episode // m, *self.horizon)),
            "workload": str(rng.choice(workloads)),
            "load": float(rng.uniform(*self.loads)),
            "arrivals": str(rng.choice(self.arrivals)),
        }
        if focus is not None:  # after the ordinary draws, so the rest of the scenario is drawn as for any other
            settings["workload"], settings["load"] = focus.workload, float(rng.uniform(*focus.loads))
        if rng.random() < self.hetero_share:
            settings["node_speeds"] = np.clip(rng.lognormal(0.0, 0.4, size=m), 0.25, 4.0).round(3).tolist()
        if rng.random() < self.fault_share:
            settings["faults"] = {"mtbf": float(rng.uniform(100, 1000)), "mttr": float(rng.uniform(5, 30))}
        return settings

    def warmup_slots(self, settings: dict) -> int:
        """How many first slots of the episode with ``settings`` a planner plays before the learner.

        0 without ``warmup``; else what is left once the learner has ``turns_per_episode / M`` slots.
        """
        if not self.warmup:
            return 0
        learned = max(1, self.turns_per_episode // settings["num_nodes"])
        return max(0, settings["horizon"] - learned)


def warmup_slots(scenarios: ScenarioSampler | None, settings: dict) -> int:
    """The planner-played first slots of an episode with ``settings`` (none without scenarios)."""
    return 0 if scenarios is None else scenarios.warmup_slots(settings)


SIZE_BANDS = (8, 24)  # cluster-size bands of a scenario kind: up to 8 nodes, up to 24, more


def scenario_kind(settings: dict) -> int:
    """The kind of the scenario with ``settings``: its workload (the index among the sorted registered
    names) and its cluster-size band (:data:`SIZE_BANDS`), as one number. The guide of a run that keeps
    the teacher on only where it leads (``PPOConfig.guide_where_trailing``) judges each kind apart."""
    workloads = sorted(WORKLOADS)
    workload = settings.get("workload", DEFAULTS.workload)
    index = workloads.index(workload) if workload in workloads else len(workloads)
    band = sum(settings.get("num_nodes", DEFAULTS.num_nodes) > edge for edge in SIZE_BANDS)
    return index * (len(SIZE_BANDS) + 1) + band


def scenario_settings(base: dict, scenarios: ScenarioSampler | None, seed: int) -> dict:
    """The env settings of the episode with ``seed``: ``base``, or a scenario drawn from that seed."""
    if scenarios is None:
        return base
    return scenarios.sample(np.random.default_rng([seed, 0x5CE7]))


@dataclass(frozen=True)
class Padding:
    """Pads one env's observations, masks and states to the sizes of the largest scenario."""

    max_tasks: int
    max_nodes: int

    @classmethod
    def for_scenarios(cls, scenarios: ScenarioSampler | None) -> Padding | None:
        return None if scenarios is None else cls(scenarios.max_tasks_cap, scenarios.max_nodes)

    def observation(self, observation: dict) -> dict:
        vector = observation["observation"]
        mask = np.zeros(self.max_tasks + 1, dtype=observation["action_mask"].dtype)
        mask[: observation["action_mask"].size] = observation["action_mask"]
        return {"observation": layout_of(vector).padded(vector, self.max_tasks), "action_mask": mask}

    def state(self, state: np.ndarray) -> np.ndarray:
        return layout_of(state, state=True).padded(state, self.max_tasks, self.max_nodes, state=True)
