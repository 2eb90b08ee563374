"""The env-scheduler contract: one layout for observation and state, declared requirements, EnvConfig."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import mara_agents
import mara_env
from mara_agents.base import NO_FORECASTS, EnvRequirements, ObservationScheduler
from mara_agents.evaluation import env_config
from mara_env.config import DEFAULTS, EnvConfig
from mara_env.env import INFO_KEYS
from mara_env.observation import (
    GLOBAL_FEATURES,
    NODE_FEATURES,
    SLOT_SCALE,
    WORK_SCALE,
    MissingForecastsError,
    decode,
    layout_of,
)


def test_observation_parts_are_the_state_parts():
    env = mara_env.raw_env(num_nodes=3, max_tasks=5, history_window=4, horizon=40)
    env.reset(seed=1)
    rng = np.random.default_rng(0)
    for _ in range(25 * 3):
        agent = env.agent_selection
        node = int(agent.split("_")[1])
        obs = env.observe(agent)["observation"]
        layout = layout_of(obs)
        o_node, o_globals, o_rows, o_windows = layout.split_observation(obs)
        s_globals, s_nodes, s_rows, s_windows = layout_of(env.state(), state=True).split_state(env.state())
        np.testing.assert_array_equal(o_node, s_nodes[node])
        np.testing.assert_array_equal(o_globals, s_globals)
        np.testing.assert_array_equal(o_rows, s_rows)
        np.testing.assert_array_equal(o_windows, s_windows)
        np.testing.assert_array_equal(obs[layout.slices["header"]], env.state()[layout.state_slices["header"]])
        env.step(int(rng.choice(np.flatnonzero(env.observe(agent)["action_mask"]))))
    assert env.state().shape == env.state_space.shape


def test_decoded_views_are_in_physical_units():
    env = mara_env.raw_env(num_nodes=4, max_tasks=6, horizon=50, forecaster="oracle")
    env.reset(seed=2)
    turn = 0
    while turn < 12 or not any(env.sim.rows):  # a few slots, nodes spread over the live rows
        allowed = np.flatnonzero(env.observe(env.agent_selection)["action_mask"])[1:]
        env.step(int(allowed[turn % allowed.size]) if allowed.size else 0)
        turn += 1
    while env.agent_selection != "node_0":
        env.step(0)
    env.step(int(np.flatnonzero(env.observe(env.agent_selection)["action_mask"])[-1]))  # node_0 chooses
    obs = decode(env.observe(env.agent_selection))
    sim = env.sim
    live = [(row, t) for row, t in enumerate(sim.rows) if t is not None]
    assert live
    for row, task in live:
        assert obs.slots_left[row] == task.spec.deadline - sim.slot + 1
        assert obs.work_done[row] == pytest.approx(task.work, rel=1e-5)
        true_left = max(task.spec.required_work - task.work, 0.0)
        assert obs.remaining("p50")[row] == pytest.approx(true_left, rel=1e-4, abs=1e-3)
    assert obs.nodes_taken.sum() == 1 and obs.free_nodes == 3 and obs.up_nodes == 4
    assert obs.last_row == int(sim.last_row[1])
    row, task = live[0]
    work, loss = obs.window_points(row)
    np.testing.assert_allclose(work, task.history_work[-work.size :], rtol=1e-5)
    np.testing.assert_allclose(loss, task.history_loss[-loss.size :], rtol=1e-4)
    assert SLOT_SCALE == 100.0 and WORK_SCALE == 100.0


def test_forecast_features_of_an_env_without_forecaster_raise_not_zero():
    env = mara_env.raw_env(num_nodes=2, forecaster="none", horizon=20)
    env.reset(seed=0)
    obs = decode(env.observe(env.agent_selection))
    assert not obs.has_forecasts
    with pytest.raises(MissingForecastsError, match="forecaster='none'"):
        obs.remaining("p50")
    with pytest.raises(MissingForecastsError):
        obs.row("p_finish")
    obs.row("slots_left")  # other features read as usual


class RanksByForecast(ObservationScheduler):
    """A user's scheduler from docs/schedulers.md: shortest median remaining work first."""

    seen: list[float] = []

    def choose(self, obs, allowed):
        remaining = obs.remaining("p50")
        self.seen.extend(remaining[allowed].tolist())
        return int(allowed[np.argmin(remaining[allowed])])


def test_base_class_scheduler_gets_the_default_forecasts_under_evaluate():
    scheduler = RanksByForecast()
    assert env_config(scheduler, {})["forecaster"] == DEFAULTS.forecaster == "flow"
    RanksByForecast.seen = []
    record = mara_agents.evaluate(scheduler, [0], num_nodes=4, horizon=40)[0]
    assert record["arrived"] > 0 and max(RanksByForecast.seen) > 0.0


def test_requirements_decide_the_forecaster_and_refuse_conflicts():
    assert env_config(mara_agents.make("edf"), {})["forecaster"] == "none"
    assert env_config(mara_agents.make("edf"), {"forecaster": "wls"})["forecaster"] == "wls"
    assert env_config(mara_agents.make("oracle"), {})["forecaster"] == "oracle"
    assert env_config(mara_agents.make("srw"), {"forecaster": "wls"})["forecaster"] == "wls"
    assert env_config(mara_agents.make("lara"), {})["curve_split"] == "test"
    with pytest.raises(ValueError, match="needs forecaster='oracle'"):
        env_config(mara_agents.make("oracle"), {"forecaster": "flow"})
    with pytest.raises(ValueError, match="cannot run with forecaster='none'"):
        env_config(mara_agents.make("srw"), {"forecaster": "none"})
    pinned = type("Pinned", (), {"requirements": EnvRequirements(settings={"history_window": 4})})()
    assert env_config(pinned, {})["history_window"] == 4
    with pytest.raises(ValueError, match="needs history_window=4"):
        env_config(pinned, {"history_window": 8})
    with pytest.raises(ValueError, match="unknown env settings"):
        EnvRequirements(settings={"colour": 1})
    assert NO_FORECASTS.reads_forecasts is False


def test_make_mara_leaves_torch_threads_as_it_found_them():
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    target = 3 if before != 3 else 2
    torch.set_num_threads(target)
    try:
        scheduler = mara_agents.make("mara")
        assert torch.get_num_threads() == target
        mara_agents.evaluate(scheduler, [0], num_nodes=2, horizon=5)
        assert torch.get_num_threads() == target
    finally:
        torch.set_num_threads(before)


# Completion counts of seeds 0-2 at horizon 150 (8 nodes, synthetic, train load, test curves), recorded
# before the contract refactor; none of these schedulers depends on learned weights.
PINNED = {
    "random": [21, 18, 24],
    "round_robin": [24, 20, 25],
    "uniform": [28, 28, 34],
    "edf": [35, 28, 39],
    "lara": [36, 30, 38],
    "laira": [32, 28, 31],
    "oracle": [46, 37, 41],
}


@pytest.mark.parametrize("name", sorted(PINNED))
def test_same_seeds_same_completions_as_before_the_refactor(name):
    records = mara_agents.evaluate(name, [0, 1, 2], horizon=150)
    assert [r["arrived"] for r in records] == [57, 44, 46]
    assert [r["completed"] for r in records] == PINNED[name]


def test_srw_on_wls_forecasts_is_pinned_too():
    scheduler = mara_agents.SCHEDULERS["srw"](forecaster="wls")
    records = mara_agents.evaluate(scheduler, [0, 1, 2], horizon=150)
    assert [r["completed"] for r in records] == [38, 34, 38]


def test_env_config_is_the_one_place_defaults_live():
    env = mara_env.raw_env()
    assert env.config == DEFAULTS and env.config.invalid_action == "idle"
    assert (len(env.possible_agents), env.layout.max_tasks, env.sim_config.horizon) == (8, 16, 300)
    config = EnvConfig(num_nodes=2, load=np.float32(1.4), max_tasks=np.int64(4))
    assert isinstance(config.load, float) and isinstance(config.max_tasks, int)
    assert len(mara_env.raw_env(config=config).possible_agents) == 2
    with pytest.raises(TypeError, match="unknown env settings"):
        mara_env.raw_env(nodes=3)


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"num_nodes": 10**6}, "num_nodes"),
        ({"max_tasks": 10**5}, "max_tasks"),
        ({"horizon": 10**9}, "horizon"),
        ({"load": 1e4}, "load"),
        ({"load": 1e300}, "load"),
        ({"load": float("nan")}, "load"),
        ({"load": True}, "load"),
        ({"num_nodes": 2, "node_speeds": [1.0, 1e308]}, "node_speeds"),
        ({"num_nodes": 2, "node_speeds": ["a", 1]}, "node_speeds"),
        ({"history_window": 10**6}, "history_window"),
        ({"switch_cost": float("nan")}, "switch_cost"),
        ({"num_nodes": 1024, "horizon": 100_000, "load": 100.0}, "load"),
    ],
)
def test_absurd_numbers_are_one_value_error_before_allocation(kwargs, field):
    with pytest.raises(ValueError, match=field):
        mara_env.raw_env(**kwargs)


def test_infos_carry_the_same_keys_from_reset_on():
    env = mara_env.raw_env(num_nodes=2, horizon=3)
    env.reset(seed=0)
    keys = {a: set(info) for a, info in env.infos.items()}
    assert all(k == set(INFO_KEYS) for k in keys.values())
    assert set(env.infos["node_0"]["metrics"]) >= {"completion_rate", "arrived", "invalid_actions"}
    for _ in range(2):
        env.step(0)
    assert {a: set(info) for a, info in env.infos.items()} == keys


def test_layout_names_every_global_and_node_feature_once():
    layout = mara_env.raw_env(num_nodes=3, max_tasks=4).layout
    assert list(layout.global_index) == list(GLOBAL_FEATURES)
    assert layout.slices["node"].stop - layout.slices["node"].start == len(NODE_FEATURES)
    assert layout.state_slices["nodes"].stop - layout.state_slices["nodes"].start == 3 * len(NODE_FEATURES)


class PlaysMaskedRows:
    """A buggy scheduler: always asks for the last row, empty or not."""

    requirements = NO_FORECASTS

    def reset(self, seed=None):
        pass

    def act(self, observation, agent):
        return len(observation["action_mask"]) - 1


def test_records_count_invalid_actions_so_a_buggy_scheduler_shows():
    records = mara_agents.evaluate(PlaysMaskedRows(), [0], num_nodes=2, max_tasks=4, horizon=20)
    assert records[0]["invalid_actions"] > 0
    assert mara_agents.evaluate("edf", [0], num_nodes=2, max_tasks=4, horizon=20)[0]["invalid_actions"] == 0


def test_trace_rows_past_the_horizon_are_reported_in_the_metrics():
    trace = Path(__file__).resolve().parents[1] / "examples" / "traces" / "example_trace.csv"
    minute_slots = {"trace": str(trace), "slot_seconds": 60}  # 40 slots cover the first 40 minutes only
    with pytest.warns(UserWarning, match="not played"):
        records = mara_agents.evaluate("edf", [0], arrivals=minute_slots, horizon=40, num_nodes=4)
    assert records[0]["trace_rows_dropped"] > 0
    assert mara_agents.evaluate("edf", [0], horizon=40, num_nodes=4)[0]["trace_rows_dropped"] == 0
    with pytest.warns(UserWarning, match="does not apply to a trace"):
        mara_env.raw_env(arrivals=str(trace), load="heavy")
