"""The LP ceiling on completions: hand-computed cases, a brute-force optimum, and no scheduler above it."""

import itertools
from pathlib import Path

import numpy as np
import pytest

import mara_agents
import mara_env
from mara_env.core import LossCurve, SimConfig, Simulator, TaskSpec
from mara_env.core.upper_bound import completion_ceiling, env_upper_bound, least_need, slot_capacity

TRACE = Path(__file__).resolve().parents[1] / "examples" / "traces" / "example_trace.csv"
AGENTS = ["random", "round_robin", "uniform", "edf", "srw", "lara", "laira", "oracle"]


def task(task_id: int, arrival: int, deadline: int, need: float, alpha: float = 1.0) -> TaskSpec:
    """A task whose best loss reaches the target after exactly ``need`` units of work."""
    return TaskSpec(task_id, arrival, deadline, 1.0, LossCurve(np.array([2.0, 1.0]), need), alpha)


def test_hand_computed_case():
    # Slot capacity 2. A (need 2, slot 0) and B (need 3, slots 0-1) share 4 units: A whole, B 2/3.
    # C (need 1, slot 2) fits. Ceiling 1 + 2/3 + 1.
    tasks = [task(0, 0, 0, 2.0), task(1, 0, 1, 3.0), task(2, 2, 2, 1.0)]
    bound = completion_ceiling(tasks, [2.0, 2.0, 2.0])
    assert bound.completions == pytest.approx(1 + 2 / 3 + 1, abs=1e-6)
    np.testing.assert_allclose(bound.fractions, [1.0, 2 / 3, 1.0], atol=1e-6)
    assert bound.tasks == 3 and bound.rate == pytest.approx(bound.completions / 3)
    # A fault leaving half a node's speed in slot 2 halves what C can get.
    assert completion_ceiling(tasks, [2.0, 2.0, 0.5]).completions == pytest.approx(1 + 2 / 3 + 0.5, abs=1e-6)


@pytest.mark.parametrize("method", ["greedy", "highs"])
def test_both_solvers_on_the_hand_computed_case(method):
    tasks = [task(0, 0, 0, 2.0), task(1, 0, 1, 3.0), task(2, 2, 2, 1.0)]
    assert completion_ceiling(tasks, [2.0, 2.0, 2.0], method).completions == pytest.approx(8 / 3, abs=1e-6)


def test_greedy_and_highs_agree_on_random_instances():
    rng = np.random.default_rng(7)
    for _ in range(30):
        horizon = int(rng.integers(1, 40))
        tasks = []
        for k in range(int(rng.integers(1, 60))):
            arrival = int(rng.integers(0, horizon))
            tasks.append(task(k, arrival, int(rng.integers(arrival, horizon + 3)), float(rng.uniform(0.1, 20.0))))
        capacity = rng.uniform(0.0, 4.0, horizon) * (rng.random(horizon) > 0.2)
        greedy = completion_ceiling(tasks, capacity, "greedy")
        highs = completion_ceiling(tasks, capacity, "highs")
        assert greedy.completions == pytest.approx(highs.completions, abs=1e-6)
    with pytest.raises(ValueError, match="method must be one of"):
        completion_ceiling(tasks, capacity, "simplex")


def test_free_unreachable_and_cut_tasks():
    never = TaskSpec(1, 0, 3, 0.5, LossCurve(np.array([2.0, 1.0]), 1.0))  # the loss never reaches 0.5
    free = TaskSpec(2, 0, 3, 3.0, LossCurve(np.array([2.0, 1.0]), 1.0))  # reached at work 0
    assert least_need(never) == np.inf and least_need(free) == 0.0
    bound = completion_ceiling([never, free, task(3, 1, 9, 2.0)], [1.0, 1.0, 1.0])
    assert bound.fractions.tolist() == pytest.approx([0.0, 1.0, 1.0])  # task 3's window is cut at slot 2
    assert completion_ceiling([], [1.0]).completions == 0.0
    with pytest.raises(ValueError, match="capacity"):
        completion_ceiling([free], [1.0, np.nan])


def test_noisy_curves_use_the_first_reported_best_loss_at_the_target():
    # The reported loss dips to the target at grid point 2, bounces, and stays below from point 4.
    curve = LossCurve(np.array([3.0, 2.0, 0.9, 1.5, 0.8, 0.7]), 1.0)
    assert least_need(TaskSpec(0, 0, 9, 1.0, curve)) == pytest.approx(2.0)


def test_slot_capacity_reads_speeds_and_faults():
    up = np.array([[True, True], [False, True], [False, False]])
    np.testing.assert_allclose(slot_capacity([1.0, 2.5], up, 3), [3.5, 2.5, 0.0])
    np.testing.assert_allclose(slot_capacity([1.0, 2.5], None, 2), [3.5, 3.5])


def best_schedule(tasks: list[TaskSpec], horizon: int, switch_cost: float) -> int:
    """Most completions over every assignment sequence of one node (brute force)."""
    best = 0
    for plan in itertools.product(range(-1, len(tasks)), repeat=horizon):
        sim = Simulator(SimConfig(1, len(tasks), horizon, switch_cost), tasks)
        for slot, choice in enumerate(plan):
            row = choice if choice >= 0 and sim.rows[choice] is not None else -1
            if row >= 0 and sim.rows[row].spec.deadline < slot:
                row = -1
            sim.step([row])
        best = max(best, sim.counters.completed)
    return best


@pytest.mark.parametrize("switch_cost", [0.0, 0.3])
def test_the_ceiling_is_at_least_the_brute_force_optimum(switch_cost):
    rng = np.random.default_rng(0)
    for _ in range(4):
        horizon = 5
        tasks = []
        for k in range(3):
            arrival = int(rng.integers(0, 3))
            deadline = int(rng.integers(arrival, horizon))
            tasks.append(task(k, arrival, deadline, float(rng.uniform(0.5, 3.0))))
        optimum = best_schedule(tasks, horizon, switch_cost)
        ceiling = completion_ceiling(tasks, [1.0] * horizon).completions
        assert optimum <= ceiling + 1e-6


def check_agents(seeds, agents=AGENTS, **env_kwargs) -> list[dict]:
    records = []
    for agent in agents:
        for record in mara_agents.evaluate(agent, seeds, **env_kwargs):
            assert record["completed"] <= record["upper_bound"] + 1e-6, (agent, env_kwargs, record)
            records.append(record)
    return records


@pytest.mark.parametrize(
    "env_kwargs",
    [
        {"workload": "synthetic", "load": "train"},
        {"workload": "vision", "load": "extreme"},
        {"workload": "rl", "load": "heavy", "num_nodes": 4, "faults": {"mtbf": 20, "mttr": 5}},
        {"workload": "synthetic", "load": "extreme", "node_speeds": [0.5, 1.0, 1.0, 2.0], "num_nodes": 4},
    ],
)
def test_no_packaged_scheduler_exceeds_the_ceiling(env_kwargs):
    check_agents(range(3), horizon=60, **env_kwargs)


def test_the_ceiling_binds_at_the_extreme_load():
    # Not vacuous: over longer runs at the extreme load the ceiling is below the number of tasks.
    records = check_agents(range(2), agents=["edf", "oracle"], horizon=200, load="extreme")
    assert all(r["upper_bound"] < r["arrived"] for r in records)


def test_no_packaged_scheduler_exceeds_the_ceiling_on_a_trace():
    check_agents(range(2), num_nodes=4, horizon=150, arrivals=str(TRACE))


def test_env_upper_bound_matches_the_episode():
    env = mara_env.raw_env(num_nodes=4, horizon=50, forecaster="none", faults={"schedule": [(0, 0, 49)]})
    env.reset(seed=3)
    bound = env_upper_bound(env)
    assert bound.tasks == len(env.sim._tasks) > 0
    # Node 0 is down all episode: the same as a 3-node cluster seeing the same tasks.
    expected = completion_ceiling(env.sim._tasks, [3.0] * 50).completions
    assert bound.completions == pytest.approx(expected)
    with pytest.raises(ValueError, match="reset"):
        env_upper_bound(mara_env.raw_env(forecaster="none"))


def test_the_oracle_knows_needs_beyond_the_forecast_cap():
    from mara_env.forecast import MAX_REMAINING
    from mara_env.forecast.oracle import ORACLE_MAX, OracleForecaster

    history = (np.array([0.0, 1.0]), np.array([2.0, 1.9]))
    answer = OracleForecaster().predict([history] * 2, [0.5, 0.5], truth=[3700.0, np.inf])
    np.testing.assert_array_equal(answer.remaining, [[3700.0] * 3, [ORACLE_MAX] * 3])
    assert MAX_REMAINING < 3700.0


def test_the_oracle_spends_nothing_on_a_job_it_cannot_finish(tmp_path):
    # One job needing 6,000 node-slots within 300 slots on 16 nodes: at most 16 ** 0.95 x 300 = 4,170
    # with the best scaling exponent, so hopeless; a truth capped at 1,000 would look feasible.
    path = tmp_path / "big.csv"
    path.write_text(f"submit_time,deadline,duration,gpus\n0,{299 * 60},{6000 * 60},1\n")
    record = mara_agents.evaluate(
        "oracle", [0], num_nodes=16, horizon=300, arrivals={"trace": str(path), "slot_seconds": 60}
    )
    assert record[0]["arrived"] == 1 and record[0]["expired"] == 1
    assert record[0]["wasted_work"] == 0.0 and record[0]["upper_bound"] < 1.0


def test_the_mara_policy_stays_under_the_ceiling():
    check_agents(range(2), agents=["mara"], horizon=80, load="heavy")


@pytest.mark.parametrize(
    "env_kwargs",
    [
        {"arrivals": str(TRACE), "num_nodes": 4, "horizon": 150},
        {"load": "extreme", "horizon": 120, "faults": {"mtbf": 30, "mttr": 5}},
    ],
)
def test_the_streamed_windows_equal_the_list_based_ones(env_kwargs):
    # env_upper_bound reads the episode in one pass (a trace's slots made one at a time); it must give
    # exactly what the list of every task gave.
    from mara_env.core.upper_bound import task_windows

    env = mara_env.raw_env(forecaster="none", **env_kwargs)
    env.reset(seed=4)
    assert (env.sim._source is not None) == ("arrivals" in env_kwargs)  # the trace's episode is lazy
    tasks = list(env.sim.tasks)
    assert len(tasks) > 20
    needs, starts, ends = task_windows(env.sim.iter_tasks())
    np.testing.assert_array_equal(needs, [least_need(t) for t in tasks])
    np.testing.assert_array_equal(starts, [t.arrival for t in tasks])
    np.testing.assert_array_equal(ends, [t.deadline for t in tasks])
    capacity = slot_capacity(env.sim.speeds, env.node_timeline, env.sim.config.horizon)
    listed = completion_ceiling(tasks, capacity)
    streamed = env_upper_bound(env)
    assert streamed.tasks == listed.tasks == len(tasks) and streamed.completions == listed.completions
    np.testing.assert_array_equal(streamed.fractions, listed.fractions)
