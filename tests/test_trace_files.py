"""Trace files as users have them: other column names, seconds, BOMs, bad bytes, rows past the horizon."""

import pickle
import warnings

import numpy as np
import pytest

import mara_env
from mara_env.core import SimConfig
from mara_env.core.simulator import IDLE, Simulator
from mara_env.workloads import PoissonArrivals, TraceArrivals, generate_episode, make_arrivals, make_workload
from mara_env.workloads.arrivals import BurstyArrivals, parse_trace_columns, uses_load

HEADER = "submit_time,deadline,model,duration,gpus\n"
ROWS = "0,3600,resnet50,1800,2\n600,7200,bert,,\n1200,4000,gpt2,900,1\n"


def write(tmp_path, text: str | bytes, name: str = "trace.csv"):
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


def test_a_byte_order_mark_is_accepted(tmp_path):
    path = write(tmp_path, b"\xef\xbb\xbf" + (HEADER + ROWS).encode())
    plan = TraceArrivals(path, slot_seconds=60).plan(np.random.default_rng(0), 1.0, 200)
    assert plan.slots.tolist() == [0, 10, 20]


def test_a_binary_file_is_named(tmp_path):
    path = write(tmp_path, b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    with pytest.raises(ValueError, match="binary file") as info:
        TraceArrivals(path)
    assert str(path) in str(info.value)


def test_non_utf8_text_is_named(tmp_path):
    path = write(tmp_path, (HEADER + "0,10,caf\xe9,5,1\n").encode("latin-1"))
    with pytest.raises(ValueError, match="not UTF-8") as info:
        TraceArrivals(path)
    assert str(path) in str(info.value)


def test_a_directory_is_reported_as_a_directory(tmp_path):
    with pytest.raises(ValueError, match="is a directory"):
        TraceArrivals(tmp_path)
    with pytest.raises(ValueError, match="does not exist"):
        TraceArrivals(tmp_path / "nope.csv")


def test_a_duplicated_header_column_is_refused(tmp_path):
    path = write(tmp_path, "submit_time,deadline,duration,duration\n0,10,5,6\n")
    with pytest.raises(ValueError, match="column 'duration' appears more than once"):
        TraceArrivals(path)


@pytest.mark.parametrize(
    "row, message",
    [
        ("0,10,m,1e400,1", "row 2, column 'duration': inf is not finite"),
        ("0,10,m,1e300,1e300", "row 2, column 'duration': 1e+300 x gpus overflows"),
        ("1e400,1e401,m,5,1", "row 2, column 'submit_time': inf is not finite"),
        ("0,10,m,nan,1", "row 2, column 'duration': 'nan' is not a number"),
        ("0,10,m,5,-inf", "row 2, column 'gpus': -inf is not finite"),
    ],
)
def test_overflowing_values_are_refused_by_row_and_column(tmp_path, row, message):
    path = write(tmp_path, HEADER + row + "\n")
    with pytest.raises(ValueError) as info:
        TraceArrivals(path, slot_seconds=60)
    assert message in str(info.value) and str(path) in str(info.value)


def test_a_need_that_overflows_after_scaling_is_refused_not_drawn(tmp_path):
    path = write(tmp_path, HEADER + "0,,m,1e300,1\n")
    arrivals = TraceArrivals(path, slot_seconds=1e-300)
    with pytest.raises(ValueError, match=r"row 2, column 'duration': the need .* is outside \(0, 1e\+15\]"):
        arrivals.plan(np.random.default_rng(0), 1.0, 100)


def test_column_mapping_and_slot_seconds(tmp_path):
    text = "job,submission_time,num_gpu,run_seconds,model_name\nA,100,4,3600,bert\nB,700,1,600,gpt2\n"
    path = write(tmp_path, text)
    columns = {"submit_time": "submission_time", "gpus": "num_gpu", "duration": "run_seconds", "model": "model_name"}
    arrivals = TraceArrivals(path, slot_seconds=60, columns=columns)
    plan = arrivals.plan(np.random.default_rng(0), 1.0, 500)
    assert plan.slots.tolist() == [0, 10]
    assert plan.deadlines.tolist() == [-1, -1]  # no deadline column: the deadline model draws them
    assert plan.needs.tolist() == pytest.approx([4 * 3600 / 60, 600 / 60])
    assert arrivals.table.model_names == ["bert", "gpt2"]
    tasks = generate_episode(make_workload("synthetic", "test"), np.random.default_rng(0), 1.0, 500, arrivals=arrivals)
    assert [t.arrival for t in tasks] == [0, 10]
    assert [t.required_work for t in tasks] == pytest.approx([240.0, 10.0])


def test_mapped_names_appear_in_errors(tmp_path):
    path = write(tmp_path, "submission_time,num_gpu\n0,x\n")
    with pytest.raises(ValueError, match="row 2, column 'num_gpu': 'x' is not a number"):
        TraceArrivals(path, columns={"submit_time": "submission_time", "gpus": "num_gpu"})
    with pytest.raises(ValueError, match="missing required column"):
        TraceArrivals(path)


def test_cli_column_form():
    assert parse_trace_columns("submit_time=submission_time, gpus=num_gpu") == {
        "submit_time": "submission_time",
        "deadline": "deadline",
        "model": "model",
        "duration": "duration",
        "gpus": "num_gpu",
    }
    with pytest.raises(ValueError, match="OURS=THEIRS"):
        parse_trace_columns("submit_time")
    with pytest.raises(ValueError, match="unknown key"):
        parse_trace_columns("start=submission_time")
    with pytest.raises(ValueError, match="same file column"):
        parse_trace_columns("submit_time=t,deadline=t")
    with pytest.raises(ValueError, match="same file column"):  # deadline keeps its own name by default
        parse_trace_columns("submit_time=deadline")
    assert parse_trace_columns("submit_time=deadline,deadline=")["deadline"] is None
    with pytest.raises(ValueError, match="OURS=THEIRS"):
        parse_trace_columns("=x")
    with pytest.raises(ValueError, match="None: an optional column"):
        parse_trace_columns("submit_time=")


def test_make_arrivals_forms(tmp_path):
    path = write(tmp_path, "t,g\n0,1\n60,2\n")
    by_args = make_arrivals(str(path), columns="submit_time=t,gpus=g", slot_seconds=30)
    by_mapping = make_arrivals({"trace": str(path), "columns": {"submit_time": "t", "gpus": "g"}, "slot_seconds": 30})
    for arrivals in (by_args, by_mapping, make_arrivals(path, columns={"submit_time": "t"})):
        assert isinstance(arrivals, TraceArrivals) and not uses_load(arrivals)
    assert by_args.plan(None, 0.0, 10).slots.tolist() == [0, 2]
    assert uses_load(make_arrivals("poisson")) and uses_load(BurstyArrivals())
    with pytest.raises(ValueError, match="apply to a .csv trace only"):
        make_arrivals("poisson", slot_seconds=60)
    with pytest.raises(ValueError, match="arrivals as a mapping"):
        make_arrivals({"path": str(path)})
    with pytest.raises(ValueError, match="slot_seconds must be"):
        make_arrivals(str(path), columns="submit_time=t", slot_seconds=float("inf"))


def test_rows_past_the_horizon_are_counted_and_warned_once(tmp_path):
    rows = "".join(f"{60 * k},{60 * k + 600},m,60,1\n" for k in range(100))
    arrivals = TraceArrivals(write(tmp_path, HEADER + rows), slot_seconds=60)
    workload = make_workload("synthetic", "test")
    with pytest.warns(UserWarning, match="60 of 100 rows .* not played$"):  # every deadline known: final
        tasks = generate_episode(workload, np.random.default_rng(0), 1.0, 50, arrivals=arrivals)
    assert arrivals.rows_dropped == 60  # row k is due at slot k + 10
    assert len(tasks.all_tasks()) == 40 and arrivals.rows_dropped == 60
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        generate_episode(workload, np.random.default_rng(1), 1.0, 50, arrivals=arrivals)
    assert arrivals.rows_dropped == 60
    generate_episode(workload, np.random.default_rng(1), 1.0, 200, arrivals=arrivals)
    assert arrivals.rows_dropped == 0


def test_drawn_deadlines_past_the_horizon_count_as_dropped(tmp_path):
    rows = "".join(f"{k},,500,1\n" for k in range(20))
    arrivals = TraceArrivals(write(tmp_path, "submit_time,deadline,duration,gpus\n" + rows), slot_seconds=1)
    workload = make_workload("synthetic", "test")
    episode = generate_episode(workload, np.random.default_rng(0), 1.0, 30, arrivals=arrivals)
    assert arrivals.rows_dropped == 0  # the deadlines are drawn when each row's slot begins
    with pytest.warns(UserWarning, match=r"1 of 20 rows .* not played \(so far"):
        assert episode.arriving(0) == []
    assert arrivals.rows_dropped == 1
    assert episode.all_tasks() == () and arrivals.rows_dropped == 20  # 500 node-slots cannot be due in 30
    assert episode.all_tasks() == () and arrivals.rows_dropped == 20  # each row is counted once


def test_plans_are_parsed_once_and_cached(tmp_path):
    arrivals = TraceArrivals(write(tmp_path, HEADER + ROWS), slot_seconds=60)
    first = arrivals.plan(np.random.default_rng(0), 1.0, 200)
    assert arrivals.plan(np.random.default_rng(5), 9.0, 200) is first
    assert not first.slots.flags.writeable
    assert arrivals.source_rows(200).tolist() == [2, 3, 4]


def test_blank_lines_quoted_fields_and_short_rows(tmp_path):
    text = 'submit_time,model,duration\n0,"a, quoted",10\n\n30,b\n'
    arrivals = TraceArrivals(write(tmp_path, text), slot_seconds=10)
    plan = arrivals.plan(None, 0.0, 10)
    assert plan.slots.tolist() == [0, 3] and plan.needs[0] == 1.0 and np.isnan(plan.needs[1])
    assert arrivals.table.model_names == ["a, quoted", "b"]
    assert arrivals.source_rows(10).tolist() == [2, 4]


def test_poisson_plans_still_draw_everything():
    plan = PoissonArrivals().plan(np.random.default_rng(0), 0.5, 100)
    assert plan.dropped == 0 and np.all(plan.deadlines == -1)


def test_a_trace_of_one_instant_gets_one_second_slots(tmp_path):
    arrivals = TraceArrivals(write(tmp_path, "submit_time,deadline\n5,5\n5,5\n"))
    plan = arrivals.plan(None, 0.0, 100)
    assert arrivals.unit(100) == 1.0 and plan.slots.tolist() == [0, 0] and plan.deadlines.tolist() == [0, 0]


def test_bodies_are_drawn_in_chunks_without_changing_small_episodes(monkeypatch):
    from mara_env.workloads import base

    workload = make_workload("synthetic", "test")
    whole = workload.sample_tasks(np.random.default_rng(3), 50)
    same = base.draw_bodies(workload, np.random.default_rng(3), 50)
    assert [d.target for d in same] == [d.target for d in whole]
    monkeypatch.setattr(base, "BODY_CHUNK", 16)
    chunked = base.draw_bodies(workload, np.random.default_rng(3), 50)
    again = base.draw_bodies(workload, np.random.default_rng(3), 50)
    assert len(chunked) == 50 and [d.target for d in chunked] == [d.target for d in again]  # seeded


def test_a_file_is_parsed_once_per_process_until_it_changes(tmp_path):
    path = write(tmp_path, HEADER + ROWS)
    first, second = TraceArrivals(path, slot_seconds=60), TraceArrivals(path)
    assert first.table is second.table
    assert TraceArrivals(path, columns={"gpus": "gpus"}).table is first.table  # the same full mapping
    path.write_text(HEADER + "0,3600,resnet50,1800,2\n")
    assert len(TraceArrivals(path)) == 1


def test_an_optional_column_can_be_left_unread(tmp_path):
    path = write(tmp_path, "deadline,duration\n100,60\n700,60\n")  # "deadline" here means submission
    arrivals = TraceArrivals(path, slot_seconds=60, columns={"submit_time": "deadline", "deadline": None})
    plan = arrivals.plan(None, 0.0, 50)
    assert plan.slots.tolist() == [0, 10] and plan.deadlines.tolist() == [-1, -1]


# ---------------------------------------------------------------- bodies drawn slot by slot


def drawn_trace(tmp_path, rows: int = 400, deadlines: bool = False):
    """Rows over 100 minutes, some without a duration (drawn need), none or all with a deadline."""
    rng = np.random.default_rng(11)
    submit = np.sort(rng.uniform(0, 6000, rows)).round(1)
    duration = rng.uniform(60, 1200, rows).round(1)
    lines = []
    for k in range(rows):
        due = f"{submit[k] + 4 * duration[k]:.1f}" if deadlines else ""
        run = "" if k % 3 == 0 else f"{duration[k]}"
        lines.append(f"{submit[k]},{due},m{k % 4},{run},{1 + k % 2}\n")
    return write(tmp_path, HEADER + "".join(lines))


def fields(task) -> tuple:
    return (task.task_id, task.arrival, task.deadline, task.target, task.scaling_exponent, task.family,
            task.switch_factor, task.curve.work_step, task.curve.losses.tobytes())  # fmt: skip


@pytest.mark.filterwarnings("ignore:trace .* not played:UserWarning")
def test_a_trace_episode_is_the_same_for_the_same_seed(tmp_path):
    arrivals = TraceArrivals(drawn_trace(tmp_path), slot_seconds=60)
    workload = make_workload("synthetic", "test")
    first = generate_episode(workload, np.random.default_rng(4), 1.0, 120, arrivals=arrivals).all_tasks()
    again = generate_episode(workload, np.random.default_rng(4), 1.0, 120, arrivals=arrivals).all_tasks()
    other = generate_episode(workload, np.random.default_rng(5), 1.0, 120, arrivals=arrivals).all_tasks()
    assert len(first) > 100 and [fields(t) for t in first] == [fields(t) for t in again]
    assert [fields(t) for t in first] != [fields(t) for t in other]
    ids = [t.task_id for t in first]
    assert ids == sorted(set(ids))  # unique and increasing with arrival (places in the plan)


@pytest.mark.filterwarnings("ignore:trace .* not played:UserWarning")
@pytest.mark.parametrize("workload_name", ["synthetic", "mixed"])
def test_a_slot_made_late_equals_the_slot_made_early(tmp_path, workload_name):
    arrivals = TraceArrivals(drawn_trace(tmp_path), slot_seconds=60)
    workload = make_workload(workload_name, "test")
    early = generate_episode(workload, np.random.default_rng(8), 1.0, 120, arrivals=arrivals)
    late = generate_episode(workload, np.random.default_rng(8), 1.0, 120, arrivals=arrivals)
    first = {slot: [fields(t) for t in early.arriving(slot)] for slot in (70, 3, 40)}  # out of order, first
    in_order = [fields(t) for t in late]  # every slot in order, then the three again
    assert [f for slot in (3, 40, 70) for f in first[slot]] == [f for f in in_order if f[1] in (3, 40, 70)]
    assert all(first[slot] == [fields(t) for t in late.arriving(slot)] for slot in first)


@pytest.mark.filterwarnings("ignore:trace .* not played:UserWarning")
def test_a_trace_reset_draws_only_the_first_slot(tmp_path):
    class Counting:
        name = "counting"

        def __init__(self):
            self.inner, self.drawn = make_workload("synthetic", "test"), 0

        def sample_tasks(self, rng, count):
            self.drawn += count
            return self.inner.sample_tasks(rng, count)

    arrivals = TraceArrivals(drawn_trace(tmp_path), slot_seconds=60)
    workload = Counting()
    episode = generate_episode(workload, np.random.default_rng(0), 1.0, 120, arrivals=arrivals)
    assert workload.drawn == 0
    sim = Simulator(SimConfig(4, 8, 120), episode)
    first_slot = int(np.count_nonzero(arrivals.plan(None, 0.0, 120).slots == 0))
    assert workload.drawn == first_slot and sim.counters.arrived <= first_slot
    for _ in range(10):
        sim.step([IDLE] * 4)
    assert workload.drawn == int(np.count_nonzero(arrivals.plan(None, 0.0, 120).slots <= 10))


def test_an_env_replaying_a_trace_counts_drops_by_the_end_and_pickles(tmp_path):
    path = drawn_trace(tmp_path, rows=200)
    kwargs = dict(num_nodes=4, horizon=60, arrivals={"trace": str(path), "slot_seconds": 30})
    env = mara_env.raw_env(**kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        env.reset(seed=3)
        whole = generate_episode(env.workload, np.random.default_rng(3), 1.0, 60, env.deadlines, env.arrivals)
        expected = [fields(t) for t in whole.all_tasks()]
        env.reset(seed=3)
        at_reset = env.metrics()["trace_rows_dropped"]
        seen: dict[int, tuple] = {}
        copy = None
        for turn, agent in enumerate(env.agent_iter()):
            if env.terminations[agent] or env.truncations[agent]:
                env.step(None)
                continue
            for task in list(env.sim.queue) + env.sim.live_tasks():
                seen.setdefault(task.spec.task_id, fields(task.spec))
            if turn == 40:
                copy = pickle.loads(pickle.dumps(env))
            mask = env.action_mask(agent)
            env.step(int(np.flatnonzero(mask)[-1]))
    final = env.metrics()
    assert final["trace_rows_dropped"] == whole.dropped > at_reset  # rows due past the horizon found in play
    assert final["arrived"] == len(expected) and sorted(seen.values()) == sorted(expected)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for agent in copy.agent_iter():
            done = copy.terminations[agent] or copy.truncations[agent]
            copy.step(None if done else int(np.flatnonzero(copy.action_mask(agent))[-1]))
    assert copy.metrics() == final


def test_a_crowded_trace_without_slot_seconds_is_warned_about(tmp_path):
    path = write(tmp_path, HEADER + "".join(f"{k},{k + 50},m,10,1\n" for k in range(500)))
    with pytest.warns(UserWarning, match=r"no slot_seconds given.*20 slots of 28.89.* 25 arrivals per slot"):
        TraceArrivals(path).plan(None, 0.0, 20)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        TraceArrivals(path).plan(None, 0.0, 100)  # 5 per slot
        TraceArrivals(path, slot_seconds=1).plan(None, 0.0, 20)  # a part of it, as asked
