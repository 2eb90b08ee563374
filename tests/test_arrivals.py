"""Arrival processes and CSV trace replay."""

import numpy as np
import pytest

import mara_agents
import mara_env
from mara_env.workloads import BurstyArrivals, PoissonArrivals, TraceArrivals, make_arrivals

TRACE = """submit_time,deadline,model,duration,gpus
0,3600,resnet50,1800,2
600,7200,bert,,
1200,4000,gpt2,900,1
"""


def counts_per_window(plan, horizon, window=10):
    counts = np.bincount(plan.slots, minlength=horizon)
    return counts.reshape(-1, window).sum(axis=1)


@pytest.mark.parametrize("process", [PoissonArrivals(), BurstyArrivals()])
def test_mean_rate_matches(process):
    plan = process.plan(np.random.default_rng(0), rate=0.4, horizon=50_000)
    assert plan.slots.size / 50_000 == pytest.approx(0.4, rel=0.05)
    assert np.all(np.diff(plan.slots) >= 0)
    assert np.all(plan.deadlines == -1) and np.all(np.isnan(plan.needs))


def test_bursty_is_overdispersed_and_poisson_is_not():
    rng = np.random.default_rng(1)
    poisson = counts_per_window(PoissonArrivals().plan(rng, 0.4, 20_000), 20_000)
    bursty = counts_per_window(BurstyArrivals().plan(rng, 0.4, 20_000), 20_000)
    assert poisson.var() / poisson.mean() == pytest.approx(1.0, abs=0.15)
    assert bursty.var() / bursty.mean() > 2.0


def test_bursty_rates_keep_the_mean():
    calm, burst = BurstyArrivals(burst_factor=6.0, burst_share=0.2).rates(1.0)
    assert 0.8 * calm + 0.2 * burst == pytest.approx(1.0)
    assert burst == pytest.approx(6 * calm)


def test_trace_is_scaled_to_slots(tmp_path):
    path = tmp_path / "trace.csv"
    path.write_text(TRACE)
    plan = TraceArrivals(path, slot_seconds=60.0).plan(np.random.default_rng(0), rate=1.0, horizon=200)
    assert plan.slots.tolist() == [0, 10, 20]
    assert plan.deadlines.tolist() == [60, 120, 66]
    assert plan.needs[0] == pytest.approx(1800 * 2 / 60)
    assert np.isnan(plan.needs[1])  # no duration: the workload draws the need
    assert plan.needs[2] == pytest.approx(15.0)


def test_trace_default_scale_spans_the_horizon(tmp_path):
    path = tmp_path / "trace.csv"
    path.write_text(TRACE)
    plan = TraceArrivals(path).plan(np.random.default_rng(0), rate=1.0, horizon=100)
    assert plan.slots.tolist() == [0, 8, 16]  # 7200 s from first submission to last deadline -> 99 slots
    assert plan.deadlines.tolist()[0] == 49 and max(plan.deadlines) <= 99


def test_env_replays_a_trace_with_the_trace_deadlines(tmp_path):
    path = tmp_path / "trace.csv"
    path.write_text(TRACE)
    env = mara_env.raw_env(num_nodes=4, horizon=200, arrivals=TraceArrivals(path, slot_seconds=60.0))
    env.reset(seed=0)
    tasks = env.sim.tasks
    assert [(t.arrival, t.deadline) for t in tasks] == [(0, 60), (10, 120), (20, 66)]
    assert tasks[0].required_work == pytest.approx(60.0)
    records = mara_agents.evaluate("edf", [0], num_nodes=4, horizon=200, arrivals=str(path))
    assert records[0]["arrived"] == 3 and records[0]["completed"] + records[0]["expired"] == 3


@pytest.mark.parametrize(
    "text, message",
    [
        ("model,deadline\n0,a\n", "missing required column(s) [\"submit_time (as 'submit_time')\"]"),
        ("submit_time,deadline\n0,10\n5,abc\n", "row 3, column 'deadline': 'abc' is not a number"),
        ("submit_time,deadline\n0,10\n,20\n", "row 3, column 'submit_time': missing value"),
        ("submit_time,deadline\n10,5\n", "row 2, column 'deadline': 5.0 is before the row's submit_time"),
        ("submit_time,deadline,duration\n0,10,-3\n", "row 2, column 'duration': -3.0 must be > 0"),
        ("submit_time,deadline,gpus\n0,10,0\n", "row 2, column 'gpus': 0.0 must be > 0"),
        ("submit_time,deadline\n0,inf\n", "row 2, column 'deadline': inf is not finite"),
        ("submit_time,deadline\n", "has a header but no rows"),
    ],
)
def test_bad_traces_name_the_row_and_column(tmp_path, text, message):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(ValueError) as info:
        TraceArrivals(path)
    assert message in str(info.value) and str(path) in str(info.value)


def test_a_bad_trace_in_the_env_config_is_a_clear_error(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("deadline\n1\n")
    with pytest.raises(ValueError, match="missing required column"):
        mara_env.env(arrivals=str(path))


def test_unknown_arrivals():
    with pytest.raises(ValueError, match="arrivals must be one of"):
        make_arrivals("weekly")
    with pytest.raises(ValueError, match="arrivals must be"):
        make_arrivals(42)
