"""Returns and advantages for PPO: generalised advantage estimation and the running return statistics
that normalise the critic's targets."""

from __future__ import annotations

import numpy as np


class RunningMeanStd:
    """Running mean and variance of returns (value normalisation)."""

    def __init__(self) -> None:
        self.mean, self.var, self.count = 0.0, 1.0, 1e-4

    def update(self, x: np.ndarray) -> None:
        mean, var, n = float(x.mean()), float(x.var()), x.size
        delta, total = mean - self.mean, self.count + n
        self.mean += delta * n / total
        self.var = (self.var * self.count + var * n + delta**2 * self.count * n / total) / total
        self.count = total

    @property
    def std(self) -> float:
        return float(np.sqrt(self.var) + 1e-8)


def gae(rewards, values, dones, last_value, gamma: float, lam: float) -> tuple[np.ndarray, np.ndarray]:
    """Generalised advantage estimates and returns over a ``(T, E)`` rollout.

    ``dones[t]`` marks that the episode ended with the turn ``t`` (no bootstrap past it).
    """
    steps = rewards.shape[0]
    advantages = np.zeros_like(rewards)
    running = np.zeros(rewards.shape[1])
    for t in reversed(range(steps)):
        next_value = last_value if t == steps - 1 else values[t + 1]
        alive = 1.0 - dones[t]
        delta = rewards[t] + gamma * next_value * alive - values[t]
        running = delta + gamma * lam * alive * running
        advantages[t] = running
    return advantages, advantages + values
