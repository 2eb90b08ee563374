"""How much the teacher steers PPO: the weights of the guide (the teacher's actions) and of the gate
loss (the planner the teacher follows) at each iteration, and the checks that a run can honour them."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mara_agents.mara.network import MARANet
    from mara_agents.mara.ppo import PPOConfig


def guide_weight(config: PPOConfig, iteration: int, iterations: int) -> float:
    """The teacher cross-entropy's weight at a 1-based PPO iteration: ``guide_coef`` annealed linearly
    to 0 by ``guide_until`` of the run, never below ``guide_floor``."""
    annealed = config.guide_coef * max(0.0, 1.0 - (iteration - 1) / (config.guide_until * iterations + 1e-9))
    return max(annealed, config.guide_floor)


def gate_weight(config: PPOConfig, guide: float) -> float:
    """The gate cross-entropy's weight in a PPO update whose guide weighs ``guide``: ``gate_coef``
    annealed as the guide is, never below ``gate_floor`` (0 without gate supervision)."""
    if not config.gate_coef:
        return 0.0
    annealed = config.gate_coef * guide / config.guide_coef if config.guide_coef else 0.0
    return max(annealed, config.gate_floor)


def check_gate_settings(net: MARANet, config: PPOConfig) -> None:
    """``ValueError`` before any work where ``gate_coef`` > 0 cannot be honoured (no gate, no best teacher)
    or ``gate_floor`` lies outside ``[0, gate_coef]``."""
    from mara_agents.mara import imitation
    from mara_agents.mara.teacher import BEST_TEACHERS, parse_teacher

    imitation.check_gate_supervision(net, None, config.gate_coef)
    if config.gate_floor != 0.0 and not 0.0 < config.gate_floor <= config.gate_coef:  # NaN fails too
        raise ValueError(f"gate_floor must lie in [0, gate_coef = {config.gate_coef}], got {config.gate_floor}")
    if config.gate_coef and (config.teacher is None or parse_teacher(config.teacher)[0] not in BEST_TEACHERS):
        raise ValueError(f"gate_coef > 0 needs a best teacher (it follows a planner per episode): {config.teacher!r}")
