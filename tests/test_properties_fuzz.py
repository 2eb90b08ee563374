"""Property-based: any env arguments, trace rows and actions either work with the invariants holding,
or fail with one ``ValueError`` that names the argument at fault.

Each argument is drawn either from values the docs allow or from values they rule out (recorded in
``bad``). A run with no bad argument must succeed; a run with one must raise ``ValueError`` naming
one of the bad arguments, before any slot is played, and never another exception type.
"""

import atexit
import math
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mara_env
from mara_env.env import InvalidActionError, live_turns

# Words a ValueError about each argument must contain (one of them).
NAMES = {
    "num_nodes": ["num_nodes"],
    "max_tasks": ["max_tasks"],
    "horizon": ["horizon"],
    "load": ["load"],
    "switch_cost": ["switch_cost"],
    "history_window": ["history_window"],
    "node_speeds": ["node_speeds"],
    "faults": ["fault"],
    "arrivals": ["trace", "arrivals", "slot_seconds"],
    "max_cycles": ["max_cycles"],
    "shaping": ["shaping"],
    "workload": ["workload"],
    "curve_split": ["curve_split"],
    "render_mode": ["render_mode"],
    "invalid_action": ["invalid_action"],
}

GOOD = {
    "num_nodes": st.one_of(st.integers(1, 5), st.integers(1, 5).map(np.int64)),
    "max_tasks": st.integers(1, 6),
    "horizon": st.integers(1, 25),
    "load": st.one_of(st.floats(0.05, 5.0), st.sampled_from(["train", "heavy", "extreme"]), st.just(np.float32(1.4))),
    "switch_cost": st.floats(0.0, 0.9),
    "history_window": st.integers(1, 4),
    "faults": st.sampled_from(
        [None, {"mtbf": 5.0, "mttr": 2.0}, {"mtbf": np.float64(1e12), "mttr": 1}, {"schedule": [(0, 1, 3)]}]
    ),
    "max_cycles": st.one_of(st.none(), st.integers(1, 30)),
    "shaping": st.one_of(st.booleans(), st.just(np.bool_(True))),
    "workload": st.sampled_from(["synthetic", "vision", "rl"]),
    "curve_split": st.sampled_from(["train", "val", "test"]),
    "render_mode": st.sampled_from([None, "ansi", "rgb_array"]),
    "invalid_action": st.just("idle"),
}
BAD = {
    "num_nodes": st.sampled_from([0, -2, 10**6, 2.5, True, "4"]),
    "max_tasks": st.sampled_from([0, 10**6, 1.5, None]),
    "horizon": st.sampled_from([0, -1, 10**9, 3.0]),
    "load": st.sampled_from([0.0, -1.0, 1e4, 1e300, math.nan, math.inf, "huge", True]),
    "switch_cost": st.sampled_from([1.0, -0.1, math.nan, math.inf]),
    "history_window": st.sampled_from([0, 10**6, 2.5]),
    "faults": st.sampled_from(
        [{"mtbf": 1e308, "mttr": 1}, {"mtbf": 5}, {"schedule": [(0, 5, 2)]}, {"schedule": [(0, 1.5, 2)]}, "often"]
    ),
    "max_cycles": st.sampled_from([0, -1, 2.5, "10"]),
    "shaping": st.sampled_from(["yes", 1, None]),
    "workload": st.sampled_from(["nope", 3, None]),
    "curve_split": st.sampled_from(["all", "dev", None]),
    "render_mode": st.sampled_from(["video", 1]),
    "invalid_action": st.sampled_from(["ignore", None, True]),
}

GOOD_ROW = st.tuples(
    st.floats(0, 1e5),
    st.one_of(st.none(), st.floats(0, 1e5)),
    st.one_of(st.none(), st.floats(1, 1e4)),
    st.one_of(st.none(), st.integers(1, 8)),
)
BAD_CELLS = ["abc", "1e400", "-5", "nan", "inf"]


def trace_text(rows: list, bad_cell: tuple[int, int, str] | None, bom: bool) -> str:
    lines = ["submit_time,deadline,duration,gpus"]
    for k, (submit, slack, duration, gpus) in enumerate(rows):
        cells = [repr(submit), "" if slack is None else repr(submit + slack)]
        cells += ["" if duration is None else repr(duration), "" if gpus is None else str(gpus)]
        if bad_cell is not None and bad_cell[0] == k:
            cells[bad_cell[1]] = bad_cell[2]
        lines.append(",".join(cells))
    return ("\ufeff" if bom else "") + "\n".join(lines) + "\n"


@st.composite
def arrivals(draw, folder: Path, bad: bool) -> object:
    """A process name or a drawn trace; with ``bad``, a trace with one bad value or slot length."""
    kind = "trace" if bad else draw(st.sampled_from(["poisson", "bursty", "trace", "trace"]))
    if kind != "trace":
        return kind
    rows = draw(st.lists(GOOD_ROW, min_size=1, max_size=12))
    slot = draw(st.one_of(st.none(), st.floats(1.0, 5000.0)))
    bad_cell = None
    if bad and draw(st.booleans()):
        slot = draw(st.sampled_from([0.0, -1.0, math.inf]))
    elif bad:
        column = draw(st.sampled_from([0, 2, 3]))  # submit_time, duration or gpus (deadline may be empty)
        bad_cell = (draw(st.integers(0, len(rows) - 1)), column, draw(st.sampled_from(BAD_CELLS)))
    path = folder / f"trace_{draw(st.integers(0, 10**9))}.csv"
    path.write_text(trace_text(rows, bad_cell, draw(st.booleans())))
    return {"trace": str(path), "slot_seconds": slot}


def check_invariants(env) -> None:
    metrics = env.sim.metrics()
    assert metrics["completed"] + metrics["expired"] + metrics["live"] == metrics["arrived"]
    assert all(math.isfinite(v) for v in metrics.values() if isinstance(v, float)), metrics
    for agent in env.agents:
        assert math.isfinite(env.rewards[agent])


ACTIONS = st.one_of(
    st.integers(-3, 12),
    st.integers(0, 12).map(np.int64),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.sampled_from([1.0, 2.5, "1", [1]]),
)
FOLDER = Path(tempfile.mkdtemp(prefix="mara_fuzz_"))  # hypothesis reuses it across examples
atexit.register(shutil.rmtree, FOLDER, True)


@pytest.mark.filterwarnings("ignore:trace .* not played:UserWarning")
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data(), seed=st.integers(0, 2**32 - 1), actions=st.lists(ACTIONS, max_size=80))
def test_any_arguments_work_or_name_the_bad_one(data, seed, actions):
    # At most one ruled-out argument per run (half the runs have none, so episodes get played).
    culprit = data.draw(st.one_of(st.none(), st.sampled_from([*GOOD, "node_speeds", "arrivals"])), label="bad")
    kwargs = {}
    for name in GOOD:
        if name == culprit:
            kwargs[name] = data.draw(BAD[name], label=name)
        elif data.draw(st.booleans(), label=f"give {name}"):
            kwargs[name] = data.draw(GOOD[name], label=name)
    nodes = kwargs.get("num_nodes", 8)
    nodes = int(nodes) if isinstance(nodes, (int, np.integer)) and 1 <= nodes <= 5 else 8
    if culprit == "node_speeds":
        wrong_length = [1.0] * (nodes + 1)
        kwargs["node_speeds"] = data.draw(st.sampled_from([[1e308] * nodes, [0.0] * nodes, wrong_length]))
    elif data.draw(st.booleans(), label="speeds?"):
        kwargs["node_speeds"] = data.draw(st.lists(st.floats(0.1, 10.0), min_size=nodes, max_size=nodes))
    kwargs["arrivals"] = data.draw(arrivals(FOLDER, culprit == "arrivals"), label="arrivals")
    bad = {culprit} if culprit else set()
    kwargs["forecaster"] = data.draw(st.sampled_from(["none", "wls"]), label="forecaster")
    try:
        env = mara_env.raw_env(**kwargs)
        env.reset(seed=seed)
    except ValueError as err:
        assert bad, f"valid arguments refused: {kwargs}: {err}"
        words = [w for name in bad for w in NAMES[name]]
        assert any(w in str(err) for w in words), f"{err!r} names none of {sorted(bad)}"
        return
    assert not bad, f"bad arguments {sorted(bad)} accepted: {kwargs}"
    check_invariants(env)
    for turn, agent in enumerate(live_turns(env)):
        obs = env.observe(agent)
        assert np.all(np.isfinite(obs["observation"]))
        env.step(actions[turn % len(actions)] if actions else 0)  # invalid actions idle by default
        check_invariants(env)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**16), actions=st.lists(ACTIONS, min_size=1, max_size=40))
def test_strict_mode_refuses_exactly_the_actions_outside_the_mask(seed, actions):
    env = mara_env.raw_env(num_nodes=3, max_tasks=4, horizon=10, forecaster="none", invalid_action="raise")
    env.reset(seed=seed)
    for turn, agent in enumerate(live_turns(env)):
        action = actions[turn % len(actions)]
        mask = env.observe(agent)["action_mask"]
        number = isinstance(action, (int, float, np.integer, np.floating)) and not isinstance(action, bool)
        whole = number and math.isfinite(action) and float(action).is_integer()  # 2 and 2.0 are the same action
        allowed = whole and 0 <= action < mask.size and mask[int(action)] == 1
        if allowed:
            env.step(action)
        else:
            with pytest.raises(InvalidActionError, match="action"):
                env.step(action)
            env.step(0)
        check_invariants(env)
