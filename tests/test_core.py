"""Simulator unit tests with hand-computed expectations (the semantics of docs/environment.md)."""

import numpy as np
import pytest

from mara_env.core import IDLE, LossCurve, SimConfig, Simulator, TaskSpec, parallel_efficiency


def linear_curve(points: int = 200, step: float = 1.0) -> LossCurve:
    """Loss 2.0 - 0.01 * i at work i * step: the target 2.0 - 0.01 * n needs exactly n * step work."""
    return LossCurve(2.0 - 0.01 * np.arange(points), work_step=step)


def task(task_id=0, arrival=0, deadline=50, need=10, alpha=1.0) -> TaskSpec:
    return TaskSpec(
        task_id, arrival, deadline, target=2.0 - 0.01 * need + 1e-9, curve=linear_curve(), scaling_exponent=alpha
    )


def sim(tasks, num_nodes=1, max_tasks=4, horizon=60, switch_cost=0.1, speeds=None) -> Simulator:
    return Simulator(SimConfig(num_nodes, max_tasks, horizon, switch_cost, speeds), tasks)


def test_curve_is_a_step_function_with_exact_need():
    curve = linear_curve()
    assert curve.loss_at(0.0) == 2.0
    assert curve.loss_at(2.999) == pytest.approx(1.98)
    assert curve.loss_at(3.0) == pytest.approx(1.97)
    assert curve.loss_at(1e6) == pytest.approx(2.0 - 0.01 * 199)  # clamped to the last point
    assert curve.work_to_reach(1.9 + 1e-9) == 10.0
    assert curve.work_to_reach(0.005) == float("inf")  # the curve ends at 0.01


def test_best_loss_is_running_minimum():
    curve = LossCurve(np.array([3.0, 1.0, 2.0, 0.5]), work_step=2.0)
    assert curve.loss_at(4.0) == 2.0
    assert curve.best_at(4.0) == 1.0
    assert curve.work_to_reach(1.5) == 2.0


def test_parallel_efficiency():
    assert parallel_efficiency(1, 0.5) == 1.0
    assert parallel_efficiency(4, 0.5) == pytest.approx(0.5)
    assert parallel_efficiency(4, 1.0) == 1.0


def test_switch_cost_is_paid_once_when_a_node_starts_a_task():
    s = sim([task()])
    s.step([0])  # the node idled before slot 0: it pays the switch cost
    s.step([0])
    assert s.rows[0].work == pytest.approx(0.9 + 1.0)
    assert s.counters.switches == 1


def test_switching_away_and_back_pays_twice():
    s = sim([task(0), task(1)])
    s.step([0])  # 0.9 to task 0
    s.step([1])  # 0.9 to task 1
    s.step([0])  # back to task 0: 0.9 again
    assert s.rows[0].work == pytest.approx(1.8)
    assert s.rows[1].work == pytest.approx(0.9)
    assert s.counters.switches == 3


def test_multi_node_scaling_is_sublinear():
    s = sim([task(alpha=0.5, need=100)], num_nodes=4, switch_cost=0.0)
    s.step([0, 0, 0, 0])
    assert s.rows[0].work == pytest.approx(4 * 4**-0.5)  # = 2.0 node-equivalents


def test_heterogeneous_speeds_and_mixed_switching():
    s = sim([task(alpha=0.5, need=100)], num_nodes=2, switch_cost=0.1, speeds=[1.0, 2.0])
    s.step([0, IDLE])  # node 0 starts: 0.9
    s.step([0, 0])  # node 0 stays (1.0), node 1 switches in (2.0 * 0.9)
    assert s.rows[0].work == pytest.approx(0.9 + (1.0 + 1.8) * 2**-0.5)
    assert s.counters.switches == 2


def test_completion_in_exactly_the_deadline_slot():
    # Work after slot k is 0.9 + k; the need of 10 is met at the end of slot 10 (the deadline).
    s = sim([task(deadline=10)])
    for _ in range(10):
        result = s.step([0])
        assert result.completed == [] and result.expired == []
    result = s.step([0])
    assert result.slot == 10 and result.completed == [0]
    assert s.metrics()["completed"] == 1 and s.metrics()["completion_rate"] == 1.0
    assert s.rows[0] is None


def test_expiry_one_slot_earlier_deadline_wastes_the_work():
    s = sim([task(deadline=9)])
    for _ in range(9):
        s.step([0])
    result = s.step([0])  # slot 9: work 9.9 < 10
    assert result.expired == [0] and result.completed == []
    m = s.metrics()
    assert m["expired"] == 1 and m["completion_rate"] == 0.0
    assert m["wasted_work"] == pytest.approx(1.0)  # all credited work went to the expired task
    assert m["mean_failure_shortfall"] == pytest.approx(1 - 9.9 / 10)


def test_task_leaves_after_deadline_and_cannot_be_scheduled():
    s = sim([task(deadline=0, need=100), task(1, deadline=30)])
    s.step([IDLE])
    assert s.rows[0] is None
    with pytest.raises(ValueError, match="row 0 is empty"):
        s.step([0])


def test_down_node_idles_and_is_not_counted_as_capacity():
    s = sim([task(need=100)], num_nodes=2, switch_cost=0.0)
    s.set_node_up(1, False)
    with pytest.raises(ValueError, match="node 1 is down"):
        s.step([0, 0])
    s.step([0, IDLE])
    assert s.rows[0].work == pytest.approx(1.0)
    m = s.metrics()
    assert m["utilisation"] == 1.0  # 1 busy of 1 up node-slot


def test_bad_assignment_changes_nothing():
    s = sim([task()], num_nodes=2)
    before = (s.slot, s.rows[0].work, s.counters.up_node_slots, s.last_task.copy())
    for bad in ([0], [0, 5], [0, 1], [0.0, 0.0], [0, "a"]):
        with pytest.raises(ValueError):
            s.step(bad)
    assert (s.slot, s.rows[0].work, s.counters.up_node_slots) == before[:3]
    assert np.array_equal(s.last_task, before[3])


def test_metrics_over_a_small_run():
    # Two tasks, two nodes, no switch cost; task 0 needs 3, task 1 needs 100 (expires at slot 3).
    tasks = [task(0, deadline=10, need=3), task(1, deadline=3, need=100)]
    s = sim(tasks, num_nodes=2, switch_cost=0.0, horizon=5)
    s.step([0, 1])
    s.step([0, 1])
    s.step([0, IDLE])  # task 0 reaches 3 and completes
    s.step([IDLE, 1])  # slot 3: task 1 expires with 3 units of work
    s.step([IDLE, IDLE])
    m = s.metrics()
    assert s.done
    assert (m["arrived"], m["completed"], m["expired"], m["live"]) == (2, 1, 1, 0)
    assert m["credited_work"] == pytest.approx(6.0)
    assert m["wasted_work"] == pytest.approx(0.5)
    assert m["utilisation"] == pytest.approx(6 / 10)
    assert m["switches_per_task"] == pytest.approx(1.5)  # 0->t0, 1->t1, 1: idle->t1
    assert m["mean_failure_shortfall"] == pytest.approx(0.97)


def test_full_table_queues_arrivals_in_fifo_order():
    tasks = [task(i, need=5) for i in range(3)]
    s = sim(tasks, max_tasks=2, switch_cost=0.0)
    assert [t.spec.task_id for t in s.live_tasks()] == [0, 1]
    assert [t.spec.task_id for t in s.queue] == [2]
    for _ in range(5):
        s.step([0])
    assert s.rows[0].spec.task_id == 2  # the freed row goes to the queued task
    assert s.rows[1].spec.task_id == 1  # and task 1 keeps its row


def test_run_over_raises():
    s = sim([task()], horizon=1)
    s.step([IDLE])
    with pytest.raises(ValueError, match="run is over"):
        s.step([IDLE])


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"num_nodes": 0}, "num_nodes"),
        ({"max_tasks": 0}, "max_tasks"),
        ({"horizon": 0}, "horizon"),
        ({"switch_cost": 1.0}, "switch_cost"),
        ({"node_speeds": [1.0]}, "node_speeds"),
        ({"num_nodes": 1, "node_speeds": [0.0]}, "node_speeds"),
    ],
)
def test_config_errors_name_the_field(kwargs, field):
    with pytest.raises(ValueError, match=field):
        SimConfig(**kwargs)


def test_taskspec_validation():
    with pytest.raises(ValueError, match="deadline"):
        TaskSpec(0, 5, 4, 1.0, linear_curve())
    with pytest.raises(ValueError, match="scaling_exponent"):
        TaskSpec(0, 0, 4, 1.0, linear_curve(), scaling_exponent=1.5)
    with pytest.raises(ValueError, match="losses"):
        LossCurve(np.array([1.0, -1.0]), 1.0)


def test_per_task_switch_factor_scales_the_switch_cost():
    spec = TaskSpec(0, 0, 50, 1.0, linear_curve(), scaling_exponent=1.0, switch_factor=0.5)
    s = sim([spec], switch_cost=0.2)
    s.step([0])
    assert s.rows[0].work == pytest.approx(1.0 - 0.2 * 0.5)
