"""The network a PPO run builds, and another run's warm start to begin PPO from instead of cloning anew.

A warm start (the teacher cloned, the critic fitted to its returns) takes a generalist run 20-odd
minutes; PPO variants started from one saved warm start are compared from the same point and each
skips that time. The source run must have built the same network on the same env settings.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from mara_agents.mara.checkpoint import build, load_checkpoint
from mara_agents.mara.network import MARANet
from mara_agents.mara.slot_network import SlotMARANet
from mara_env.config import DEFAULTS

if TYPE_CHECKING:
    from mara_agents.mara.ppo import PPOConfig


def build_network(config: PPOConfig) -> MARANet | SlotMARANet:
    """The untrained network ``config`` describes."""
    return build(
        {
            "architecture": config.architecture,
            "history_window": config.env.get("history_window", DEFAULTS.history_window),
            "width": config.width,
            "layers": config.layers,
            "heads": 4,
            "autoregressive": config.autoregressive,
            "planner_hints": config.planner_hints,
            "pick_hints": config.pick_hints,
            "uniform_pick": config.uniform_pick,
            "size_context": config.size_context,
            "load_signal": config.load_signal,
            "gate_context": config.gate_context,
        }
    )


def load_warm_start(config: PPOConfig) -> tuple[MARANet | SlotMARANet, dict]:
    """The warm-start network and statistics of the run in ``config.warm_start_from``; ``ValueError``
    when they are missing or corrupt, or when its network or env settings differ from ``config``'s."""
    source = Path(config.warm_start_from)
    where = f"warm_start_from {source}"
    saved, env, _extra = load_checkpoint(source / "warm_start.pt")
    wanted = build_network(config).config
    differ = [key for key in sorted({*saved.config, *wanted}) if saved.config.get(key) != wanted.get(key)]
    differ += [f"env {key}" for key in sorted({*env, *config.env}) if env.get(key) != config.env.get(key)]
    if differ:
        raise ValueError(f"{where}: its warm start was made with other settings than this run's: {', '.join(differ)}")
    try:
        stats = json.loads((source / "warm_start.json").read_text())
        mean, std, turns = (float(stats[key]) for key in ("return_mean", "return_std", "turns"))
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise ValueError(f"{where}: warm_start.json must hold return_mean, return_std and turns ({error})") from None
    if not (np.isfinite([mean, std, turns]).all() and std > 0.0 and turns >= 1.0):
        raise ValueError(f"{where}: warm_start.json needs finite returns, return_std > 0 and turns >= 1: {stats}")
    return saved, stats
