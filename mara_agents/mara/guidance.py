"""How much the teacher steers PPO: the weights of the guide (the teacher's actions) and of the gate
loss (the planner the teacher follows) at each iteration, and the checks that a run can honour them.

With ``guide_where_trailing`` the guide's floor holds only on scenario kinds where the teacher (each
episode's best candidate, or the best single candidate of the kind) still completes more than the
student (:class:`TeacherLead`): a floor everywhere kept one workload and lost another that PPO alone
had learned, so each kind keeps the teacher only while it leads there. With ``guide_floor_min_nodes``
it holds only on clusters of at least that many nodes: with ``explore_nodes`` PPO learned at small
clusters and drifted at 64 nodes, where few turns of a slot sample and one node's action moves the
team's reward least.
"""

from __future__ import annotations

import warnings
from collections import defaultdict, deque
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from mara_agents.mara.network import MARANet
    from mara_agents.mara.ppo import PPOConfig


def annealed_guide(config: PPOConfig, iteration: int, iterations: int) -> float:
    """The teacher cross-entropy's weight at a 1-based PPO iteration before any floor: ``guide_coef``
    annealed linearly to 0 by ``guide_until`` of the run."""
    return config.guide_coef * max(0.0, 1.0 - (iteration - 1) / (config.guide_until * iterations + 1e-9))


def guide_weight(config: PPOConfig, iteration: int, iterations: int) -> float:
    """The teacher cross-entropy's weight at a 1-based PPO iteration: :func:`annealed_guide`, never below
    ``guide_floor``."""
    return max(annealed_guide(config, iteration, iterations), config.guide_floor)


def guide_weights(config: PPOConfig, iteration: int, iterations: int, held: np.ndarray | None) -> float | np.ndarray:
    """The guide's weight at a 1-based PPO iteration: :func:`guide_weight` where the floor holds on every
    turn (``held`` is ``None``), else one weight per turn, the annealed weight everywhere and
    ``guide_floor`` under it only on the turns where ``held`` (from :func:`floor_held`) is true."""
    if held is None:
        return guide_weight(config, iteration, iterations)
    floor = config.guide_floor * np.asarray(held, dtype=float)
    return np.maximum(annealed_guide(config, iteration, iterations), floor)


def floor_held(config: PPOConfig, lead: TeacherLead | None, kinds: np.ndarray, nodes: np.ndarray) -> np.ndarray | None:
    """Per turn, whether the guide's floor holds there: on the kinds the teacher leads (``lead``, with
    ``guide_where_trailing``) and on clusters of at least ``guide_floor_min_nodes`` nodes (``nodes``: each
    turn's M), both where both are set; ``None`` where neither is (the floor holds everywhere)."""
    held = None if lead is None else lead.trailing(kinds)
    if config.guide_floor_min_nodes is not None:
        big = np.asarray(nodes) >= config.guide_floor_min_nodes
        held = big if held is None else held & big
    return held


EPISODE_BEST = "episode_best"  # the teacher as it labels: the best candidate of each episode
BEST_SINGLE = "best_single"  # the one candidate with the highest mean on the kind's recent episodes
LEADS = (EPISODE_BEST, BEST_SINGLE)


class TeacherLead:
    """Per scenario kind, how much more the teacher completed than the student over the last ``window``
    episodes of that kind the student finished (completion rates, paired by episode).

    ``against`` names what the student is held to: ``episode_best``, the teacher as it labels (each
    episode's best candidate, a per-episode choice no single scheduler makes), or ``best_single``, the
    candidate with the highest mean over those episodes (the best scheduler of the kind, as the
    generalisation table judges a cell).
    """

    def __init__(self, against: str = EPISODE_BEST, window: int = 8) -> None:
        if against not in LEADS:
            raise ValueError(f"against must be one of {list(LEADS)}, got {against!r}")
        if window < 1:
            raise ValueError(f"window must be at least 1 episode, got {window}")
        self.against = against
        self.episodes: dict[int, deque] = defaultdict(lambda: deque(maxlen=window))

    def record(self, kind: int, candidate_rates: tuple[float, ...], student_rate: float) -> None:
        """One finished episode of scenario kind ``kind``: each candidate's rate on it (NaN: did not play)."""
        self.episodes[kind].append((np.asarray(candidate_rates, dtype=float), float(student_rate)))

    def lead(self, kind: int) -> float:
        """The mean lead on ``kind`` (NaN before any episode of it)."""
        episodes = self.episodes.get(kind)
        if not episodes:
            return float("nan")
        rates = np.stack([candidates for candidates, _ in episodes])
        student = float(np.mean([rate for _, rate in episodes]))
        with warnings.catch_warnings():  # a candidate that never played the kind: an all-NaN column
            warnings.simplefilter("ignore", RuntimeWarning)
            teacher = (
                np.nanmax(rates, axis=1).mean() if self.against == EPISODE_BEST else np.nanmax(np.nanmean(rates, 0))
            )
        return float(teacher) - student

    def trailing(self, kinds: np.ndarray) -> np.ndarray:
        """For each kind in ``kinds``, whether the student trails the teacher there (the mean lead > 0);
        a kind with no finished episode yet counts as trailing, so the guide starts on everywhere."""
        leads = {kind: self.lead(kind) for kind in np.unique(kinds)}
        return np.array([not leads[kind] <= 0.0 for kind in np.ravel(kinds)]).reshape(np.shape(kinds))


def gate_weight(config: PPOConfig, guide: float) -> float:
    """The gate cross-entropy's weight in a PPO update whose guide weighs ``guide``: ``gate_coef``
    annealed as the guide is, never below ``gate_floor`` (0 without gate supervision)."""
    if not config.gate_coef:
        return 0.0
    annealed = config.gate_coef * guide / config.guide_coef if config.guide_coef else 0.0
    return max(annealed, config.gate_floor)


def check_gate_settings(net: MARANet, config: PPOConfig) -> None:
    """``ValueError`` before any work where ``gate_coef`` > 0, ``gate_rounds`` > 0 or ``rule_gate`` cannot be
    honoured (no gate, no best teacher; for the rule gate also a selector, or scenarios it cannot draw),
    ``split_step`` comes without ``rule_gate``, or ``gate_floor`` lies outside ``[0, gate_coef]``."""
    from mara_agents.mara import imitation
    from mara_agents.mara.teacher import BEST_TEACHERS, parse_teacher

    imitation.check_gate_supervision(net, None, config.gate_coef)
    if config.gate_floor != 0.0 and not 0.0 < config.gate_floor <= config.gate_coef:  # NaN fails too
        raise ValueError(f"gate_floor must lie in [0, gate_coef = {config.gate_coef}], got {config.gate_floor}")
    if config.gate_coef and (config.teacher is None or parse_teacher(config.teacher)[0] not in BEST_TEACHERS):
        raise ValueError(f"gate_coef > 0 needs a best teacher (it follows a planner per episode): {config.teacher!r}")
    if config.gate_rounds < 0 or config.gate_episodes < 1:
        raise ValueError(f"gate_rounds must be >= 0, gate_episodes >= 1: {config.gate_rounds}, {config.gate_episodes}")
    best = config.teacher is not None and parse_teacher(config.teacher)[0] in BEST_TEACHERS
    if config.gate_rounds and (getattr(net, "hint_embed", None) is None or not best):
        raise ValueError(
            "gate_rounds > 0 needs a slot actor with planner hints and a best teacher (it labels the gate's "
            f"planner on the policy's own play), got teacher {config.teacher!r}"
        )
    if config.rule_gate:
        from mara_agents.mara.rule_gate_refit import check_rule_plays

        rule_ready = getattr(net, "hint_embed", None) is not None and getattr(net, "selector", None) is None
        if not (rule_ready and best):
            raise ValueError(
                "rule_gate needs a slot actor with planner hints, no selector and a best teacher, "
                f"got {config.teacher!r}"
            )
        check_rule_plays(config.scenarios)
    if config.split_step and not config.rule_gate:
        raise ValueError("split_step splits the rule-gate step's network: it needs rule_gate")


def check_guide_settings(config: PPOConfig) -> None:
    """``ValueError`` before any work where ``guide_where_trailing`` or ``guide_floor_min_nodes`` cannot be
    honoured: both need a floor to hold (``guide_floor`` > 0); the first a best teacher (only it plays
    each episode to compare with), the second a whole number of nodes >= 1."""
    from mara_agents.mara.teacher import BEST_TEACHERS, parse_teacher

    check_floor_min_nodes(config)
    if not config.guide_where_trailing:
        return
    if config.guide_where_trailing not in LEADS:
        raise ValueError(f"guide_where_trailing must be one of {list(LEADS)}, got {config.guide_where_trailing!r}")
    if not config.guide_floor > 0.0:
        raise ValueError(f"guide_where_trailing needs guide_floor > 0 (the weight it holds), got {config.guide_floor}")
    if config.teacher is None or parse_teacher(config.teacher)[0] not in BEST_TEACHERS:
        raise ValueError(
            f"guide_where_trailing needs a best teacher {list(BEST_TEACHERS)} (it plays each episode, so the "
            f"student's result can be compared with it), got {config.teacher!r}"
        )


def check_floor_min_nodes(config: PPOConfig) -> None:
    """``ValueError`` unless ``guide_floor_min_nodes`` is ``None`` or a whole number >= 1 with a floor to hold."""
    nodes = config.guide_floor_min_nodes
    if nodes is None:
        return
    if isinstance(nodes, bool) or not isinstance(nodes, int) or nodes < 1:
        raise ValueError(f"guide_floor_min_nodes must be a whole number of nodes >= 1 or None, got {nodes!r}")
    if not config.guide_floor > 0.0:
        raise ValueError(f"guide_floor_min_nodes needs guide_floor > 0 (the weight it holds), got {config.guide_floor}")
