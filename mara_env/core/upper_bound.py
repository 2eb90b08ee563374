"""A true ceiling on an episode's completions: the LP relaxation with every task's need known.

Relaxed problem (every relaxation only enlarges what can be done, so its optimum bounds any
scheduler's completions from above):

- task ``k`` may receive work in any slot ``t`` of its window ``[arrival_k, deadline_k]``;
- the work of all tasks in slot ``t`` is at most ``C_t``, the summed speed of the nodes up in ``t``
  (the simulator credits a task ``effective x eff(n)`` with ``effective <= its nodes' speeds`` and
  ``eff(n) = n ** (alpha - 1) <= 1``, each node trains one task, and a down node only idles);
- no switch cost, no table limit (no admission queue), no parallel inefficiency, and work may be
  split fractionally between tasks;
- completion fraction ``y_k in [0, 1]`` with ``sum_t x_kt >= need_k * y_k``, where ``need_k`` is the
  least cumulative work at which the *reported best* loss reaches the target (curve noise included:
  :meth:`LossCurve.work_to_reach`), less the simulator's grid round-off allowance.

The optimum of ``max sum_k y_k`` is at least the completions of any schedule the simulator can play.
Slots are aggregated into the intervals between consecutive window ends (an allocation over an
interval can be spread over its slots in proportion to their capacities, so this is exact).

Two exact solvers of the same LP:

- ``"greedy"``: windows are intervals, so a set of work amounts ``w_k`` is deliverable iff for every
  interval ``[a, b]`` the tasks whose windows lie inside it ask for at most its capacity (Hall's
  condition on a line). The deliverable ``w`` (capped at the needs) form a polymatroid, and the
  objective ``sum w_k / need_k`` is linear with positive weights, so the greedy is optimal: smallest
  need first, each task gets the most the remaining interval slacks allow. ``O(tasks x intervals^2)``
  time, ``intervals^2`` memory.
- ``"highs"``: the LP itself, sparse, solved by HiGHS through scipy.

``"auto"`` (the default) takes the greedy while the slack table is small, HiGHS otherwise; the
tests check that both agree.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from mara_env.core.curve import _GRID_EPS
from mara_env.core.task import TaskSpec


@dataclass(frozen=True)
class UpperBound:
    """The LP ceiling of one episode.

    Attributes
    ----------
    completions:
        Optimal ``sum_k y_k``: no schedule completes more tasks (a real number; completions are
        integers, so ``floor(completions + 1e-6)`` bounds them too).
    tasks:
        Tasks in the episode.
    fractions:
        ``y_k`` per task (in the order given).
    seconds:
        Time to read the tasks' needs and windows, build and solve the LP.
    """

    completions: float
    tasks: int
    fractions: np.ndarray
    seconds: float

    @property
    def rate(self) -> float:
        """Ceiling on the completion rate (completions / tasks; 1.0 for an empty episode)."""
        return self.completions / self.tasks if self.tasks else 1.0


def least_need(spec: TaskSpec) -> float:
    """Least work at which the simulator counts ``spec`` complete (``inf`` if never).

    The simulator reads grid index ``int(work / step + 1e-9)``, so work a hair below the exact
    need already reaches it; subtracting that allowance keeps the bound valid.
    """
    need = spec.curve.work_to_reach(spec.target)
    if not np.isfinite(need):
        return float("inf")
    return max(need - _GRID_EPS * spec.curve.work_step, 0.0)


def _intervals(starts: np.ndarray, ends: np.ndarray, capacity: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Interval edges (slot indices) from every window start and end + 1, and each interval's capacity."""
    horizon = capacity.size
    edges = np.unique(np.concatenate(([0, horizon], starts, ends + 1)))
    edges = edges[(edges >= 0) & (edges <= horizon)]
    cumulative = np.concatenate(([0.0], np.cumsum(capacity)))
    return edges, cumulative[edges[1:]] - cumulative[edges[:-1]]


# The greedy's slack table holds intervals^2 floats: above this many intervals HiGHS is used.
GREEDY_MAX_INTERVALS = 2000
METHODS = ("auto", "greedy", "highs")


def task_windows(tasks: Iterable[TaskSpec]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each task's least need, arrival and deadline, in one pass over ``tasks`` (in their order).

    Only these three numbers are kept per task, so ``tasks`` may be a generator that makes each
    task as it is read (a long trace's episode): its task objects are dropped as soon as read.
    """
    needs, starts, ends = array("d"), array("q"), array("q")
    for spec in tasks:
        needs.append(least_need(spec))
        starts.append(spec.arrival)
        ends.append(spec.deadline)
    return np.array(needs, dtype=np.float64), np.array(starts, dtype=np.int64), np.array(ends, dtype=np.int64)


def completion_ceiling(tasks: Iterable[TaskSpec], capacity: Sequence[float], method: str = "auto") -> UpperBound:
    """The LP ceiling on completions of ``tasks`` with ``capacity[t]`` work available in slot ``t``.

    Parameters
    ----------
    tasks:
        The episode's task specs (arrival, deadline, curve and target are read), or any iterable
        giving them once (read in one pass, see :func:`task_windows`).
    capacity:
        Per slot, the summed speed of the nodes up (``horizon`` values, finite and >= 0). Windows
        are cut at the horizon.
    method:
        ``"auto"``, ``"greedy"`` or ``"highs"`` (see the module's docstring; all give the optimum).
    """
    import time

    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    start_time = time.perf_counter()
    capacity = np.asarray(capacity, dtype=np.float64).ravel()
    if capacity.size == 0 or not np.all(np.isfinite(capacity)) or np.any(capacity < 0):
        raise ValueError(f"capacity must be one finite value >= 0 per slot (at least one slot), got {capacity!r}")
    needs, starts, ends = task_windows(tasks)
    fractions = _solve(needs, starts, np.minimum(ends, capacity.size - 1), capacity, method)
    return UpperBound(float(fractions.sum()), needs.size, fractions, time.perf_counter() - start_time)


def _solve(needs: np.ndarray, starts: np.ndarray, ends: np.ndarray, capacity: np.ndarray, method: str) -> np.ndarray:
    """``y`` per task from its need and window (``ends`` already cut at the horizon)."""
    fractions = np.zeros(needs.size)
    # Tasks needing nothing are complete for free; unreachable or out-of-horizon ones never are.
    free = needs <= 0
    fractions[free] = 1.0
    active = np.flatnonzero(~free & np.isfinite(needs) & (starts <= ends))
    if active.size:
        edges, interval_capacity = _intervals(starts[active], ends[active], capacity)
        first = np.searchsorted(edges, starts[active])  # interval index of each window's first slot
        last = np.searchsorted(edges, ends[active] + 1) - 1  # and its last
        greedy = method == "greedy" or (method == "auto" and interval_capacity.size <= GREEDY_MAX_INTERVALS)
        solve = _greedy if greedy else _highs
        fractions[active] = solve(needs[active], first, last, interval_capacity)
    return fractions


def _greedy(needs: np.ndarray, first: np.ndarray, last: np.ndarray, interval_capacity: np.ndarray) -> np.ndarray:
    """``y`` by the polymatroid greedy: smallest need first, each as much as the slacks allow."""
    cumulative = np.concatenate(([0.0], np.cumsum(interval_capacity)))
    # slack[i, j]: capacity of intervals i..j less what the tasks inside them got (unused for i > j).
    slack = cumulative[None, 1:] - cumulative[:-1, None]
    fractions = np.zeros(needs.size)
    for k in np.argsort(needs, kind="stable").tolist():
        block = slack[: first[k] + 1, last[k] :]  # every interval containing task k's window
        work = min(needs[k], max(float(block.min()), 0.0))
        if work > 0:
            block -= work
            fractions[k] = work / needs[k]
    return np.minimum(fractions, 1.0)


def _highs(needs: np.ndarray, first: np.ndarray, last: np.ndarray, interval_capacity: np.ndarray) -> np.ndarray:
    """``y`` of the LP solved by HiGHS (variables: work per task and interval, then ``y``)."""
    from scipy.optimize import linprog
    from scipy.sparse import csr_array

    n, m = needs.size, interval_capacity.size
    task_of = np.repeat(np.arange(n), last - first + 1)
    interval_of = np.concatenate([np.arange(a, b + 1) for a, b in zip(first.tolist(), last.tolist())])
    nx = task_of.size
    # Rows 0..m-1: work per interval <= its capacity; rows m..m+n-1: need_k y_k - (work of k) <= 0.
    rows = np.concatenate((interval_of, m + task_of, m + np.arange(n)))
    cols = np.concatenate((np.arange(nx), np.arange(nx), nx + np.arange(n)))
    vals = np.concatenate((np.ones(nx), -np.ones(nx), needs))
    a_ub = csr_array((vals, (rows, cols)), shape=(m + n, nx + n))
    b_ub = np.concatenate((interval_capacity, np.zeros(n)))
    cost = np.concatenate((np.zeros(nx), -np.ones(n)))
    bounds = np.column_stack((np.zeros(nx + n), np.concatenate((np.full(nx, np.inf), np.ones(n)))))
    result = linprog(cost, A_ub=a_ub, b_ub=b_ub, bounds=bounds, method="highs")
    if result.status != 0:
        raise RuntimeError(f"the upper-bound LP did not solve: {result.message}")
    return np.clip(result.x[nx:], 0.0, 1.0)


def slot_capacity(speeds: Sequence[float], up: np.ndarray | None, horizon: int) -> np.ndarray:
    """Per slot, the summed speed of the nodes up (``up``: ``(horizon, nodes)`` bool, None = all up)."""
    speeds = np.asarray(speeds, dtype=np.float64)
    if up is None:
        return np.full(horizon, float(speeds.sum()))
    return np.asarray(up, dtype=bool)[:horizon] @ speeds


def env_upper_bound(env, method: str = "auto") -> UpperBound:
    """The ceiling of the episode a reset env is about to play (its tasks, node speeds and faults).

    Reads ``env.sim`` (the simulator with the episode's tasks) and the env's node timeline (faults
    drawn at reset); call it right after ``reset`` (or at any time in the episode: neither changes).
    The tasks are read in one pass (``Simulator.iter_tasks``), keeping three numbers per task.
    """
    sim = getattr(env, "sim", None)
    if sim is None:
        raise ValueError("env_upper_bound needs an env that has been reset")
    capacity = slot_capacity(sim.speeds, env.node_timeline, sim.config.horizon)
    return completion_ceiling(sim.iter_tasks(), capacity, method)
