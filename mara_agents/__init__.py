"""mara_agents: schedulers for ``mara_env`` that act on the PettingZoo observation alone."""

from mara_agents.base import NO_FORECASTS, EnvRequirements, ObservationScheduler, Scheduler
from mara_agents.bench import BenchConfig, BenchResult, run_bench
from mara_agents.evaluation import evaluate, play_episode
from mara_agents.heuristics import (
    EDFScheduler,
    EDFUniformScheduler,
    RandomScheduler,
    RoundRobinScheduler,
    UniformScheduler,
)
from mara_agents.registry import SCHEDULERS, load_agent, make, register
from mara_agents.stats import format_table, mean_ci95, paired_difference, summarize
from mara_env import __version__  # one version for both packages: the distribution's

__all__ = [
    "SCHEDULERS",
    "BenchConfig",
    "BenchResult",
    "EDFScheduler",
    "EDFUniformScheduler",
    "EnvRequirements",
    "NO_FORECASTS",
    "ObservationScheduler",
    "RandomScheduler",
    "RoundRobinScheduler",
    "Scheduler",
    "UniformScheduler",
    "__version__",
    "evaluate",
    "format_table",
    "load_agent",
    "make",
    "mean_ci95",
    "paired_difference",
    "play_episode",
    "register",
    "run_bench",
    "summarize",
]
