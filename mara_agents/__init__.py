"""mara_agents: schedulers for ``mara_env`` that act on the PettingZoo observation alone."""

from mara_agents.base import ObservationScheduler, Scheduler
from mara_agents.bench import BenchConfig, BenchResult, load_agent, run_bench
from mara_agents.evaluation import evaluate, play_episode
from mara_agents.heuristics import EDFScheduler, RandomScheduler, RoundRobinScheduler, UniformScheduler
from mara_agents.registry import SCHEDULERS, make, register
from mara_agents.stats import mean_ci95, summarize

__all__ = [
    "SCHEDULERS",
    "BenchConfig",
    "BenchResult",
    "EDFScheduler",
    "ObservationScheduler",
    "RandomScheduler",
    "RoundRobinScheduler",
    "Scheduler",
    "UniformScheduler",
    "evaluate",
    "load_agent",
    "make",
    "mean_ci95",
    "play_episode",
    "register",
    "run_bench",
    "summarize",
]
