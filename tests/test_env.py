"""The AEC adapter: configs, masks, invalid actions, observations, reward shaping, rendering."""

import numpy as np
import pytest

import mara_agents
import mara_env
from mara_env.observation import decode


def played(env, actions_per_slot=None, slots=1):
    """Play ``slots`` slots where every node takes its first allowed task (or the given action)."""
    for _ in range(slots * len(env.agents)):
        obs, *_ = env.last()
        allowed = np.flatnonzero(obs["action_mask"])
        env.step(actions_per_slot if actions_per_slot is not None else int(allowed[-1]))


def idle_until_a_task_arrives(env):
    """Idle whole slots until the table holds a task; return the first occupied row."""
    while True:
        obs, *_ = env.last()
        rows = np.flatnonzero(obs["action_mask"][1:])
        if rows.size:
            return int(rows[0])
        played(env, actions_per_slot=0)


@pytest.mark.parametrize(
    "kwargs, field",
    [
        ({"num_nodes": 0}, "num_nodes"),
        ({"horizon": 0}, "horizon"),
        ({"horizon": -3}, "horizon"),
        ({"max_tasks": 0}, "max_tasks"),
        ({"load": 0}, "load"),
        ({"load": -1.0}, "load"),
        ({"load": "medium"}, "load"),
        ({"workload": "imagenet"}, "workload"),
        ({"forecaster": "crystal_ball"}, "forecaster"),
        ({"render_mode": "video"}, "render_mode"),
        ({"history_window": 0}, "history_window"),
        ({"max_cycles": 0}, "max_cycles"),
        ({"invalid_action": "ignore"}, "invalid_action"),
        ({"shaping": "yes"}, "shaping"),
    ],
)
def test_bad_config_names_field_and_allowed_range(kwargs, field):
    with pytest.raises(ValueError, match=field) as info:
        mara_env.env(**kwargs)
    assert "must be" in str(info.value)


def test_masked_and_out_of_range_actions_raise_and_change_nothing():
    env = mara_env.env(num_nodes=2, max_tasks=8, invalid_action="raise")
    env.reset(seed=3)
    obs, *_ = env.last()
    empty = [a for a in range(1, 9) if not obs["action_mask"][a]]
    assert empty, "seed 3 should leave some table rows empty at slot 0"
    snapshot = (env.unwrapped.sim.slot, env.agent_selection, obs["observation"].copy())
    for bad in (empty[0], 9, -1, 1.5, "1", None, float("inf"), float("nan"), True, np.bool_(True), 10**30):
        with pytest.raises(mara_env.InvalidActionError, match="allowed actions"):
            env.step(bad)
        after, *_ = env.last()
        assert (env.unwrapped.sim.slot, env.agent_selection) == snapshot[:2]
        np.testing.assert_array_equal(after["observation"], snapshot[2])


def test_invalid_action_idle_is_the_default_plays_idle_and_counts():
    env = mara_env.env(num_nodes=1, max_tasks=8)
    env.reset(seed=3)
    env.step(8)  # row 7 is empty at slot 0 with this seed
    assert env.infos["node_0"]["invalid_actions"] == 1
    assert env.infos["node_0"]["metrics"]["invalid_actions"] == 1
    assert env.unwrapped.sim.last_row[0] == -1
    for bad in (float("inf"), True, None):  # never an OverflowError, never taken as action 1
        env.step(bad)
    assert env.infos["node_0"]["invalid_actions"] == 4
    assert env.unwrapped.sim.last_row[0] == -1


def test_misuse_before_reset_is_refused_like_petting_zoo():
    env = mara_env.env()
    with pytest.raises(AssertionError, match="reset"):
        env.step(0)
    with pytest.raises(AssertionError, match="reset"):
        env.observe("node_0")


def test_step_after_the_end_is_a_warned_no_op(caplog):
    env = mara_env.env(num_nodes=2, horizon=2)
    env.reset(seed=0)
    played(env, actions_per_slot=0, slots=2)
    while env.agents:
        env.step(None)
    env.step(0)
    assert env.agents == [] and "terminated or truncated" in caplog.text


def test_observation_layout_and_autoregressive_counts():
    env = mara_env.env(num_nodes=3, max_tasks=8, history_window=4)
    env.reset(seed=1)
    idle_until_a_task_arrives(env)
    obs, *_ = env.last()
    dec = decode(obs)
    assert dec.layout == mara_env.ObservationLayout(8, 4, 3)
    assert obs["observation"].shape == env.observation_space("node_0")["observation"].shape
    present = dec.row("present") > 0
    np.testing.assert_array_equal(present, obs["action_mask"][1:] == 1)
    row = int(np.flatnonzero(present)[0])
    assert dec.row("chosen_now")[row] == 0
    # The untrained loss is the first (and only) window point, at work 0, right-aligned.
    assert dec.window[row, -1, 0] == 0.0
    assert dec.window[row, -1, 1] == pytest.approx(np.log(dec.row("loss")[row] / dec.row("target")[row]), rel=1e-5)
    assert np.all(dec.window[row, :-1] == 0.0)
    env.step(row + 1)  # node_0 picks the row ...
    env.step(row + 1)  # ... and node_1 too
    dec2 = decode(env.last()[0])
    assert dec2.node_index == 2
    assert dec2.row("chosen_now")[row] == pytest.approx(2 / 3)
    assert dec2.globals["free_nodes"] == pytest.approx(1 / 3)


def test_history_window_records_each_trained_slot():
    env = mara_env.env(num_nodes=1, max_tasks=4, history_window=3, horizon=50)
    env.reset(seed=0)
    row = idle_until_a_task_arrives(env)
    for _ in range(4):
        env.step(row + 1)
    dec = decode(env.last()[0])
    work = dec.window[row, :, 0]
    assert np.all(np.diff(work) > 0)  # three most recent points, increasing work
    assert dec.row("work_done")[row] == pytest.approx(work[-1], rel=1e-5)
    assert dec.row("observations")[row] == 1.0


def test_decode_rejects_vectors_that_are_not_observations():
    with pytest.raises(ValueError, match="does not match its header"):
        decode(np.ones(50, dtype=np.float32))


def test_state_matches_state_space():
    env = mara_env.raw_env(num_nodes=4, max_tasks=8)
    env.reset(seed=0)
    played(env, slots=3)
    state = env.state()
    assert env.state_space.contains(state)


@pytest.mark.parametrize("agent", ["random", "edf"])
@pytest.mark.parametrize("max_cycles", [None, 40])
def test_shaping_sums_to_zero_over_an_episode(agent, max_cycles):
    shaped = mara_agents.evaluate(agent, range(3), shaping=True, max_cycles=max_cycles, horizon=120)
    plain = mara_agents.evaluate(agent, range(3), shaping=False, max_cycles=max_cycles, horizon=120)
    for s, p in zip(shaped, plain):
        assert s["completed"] == p["completed"] > 0
        assert s["return"] == pytest.approx(s["completed"], abs=1e-9)
        assert p["return"] == p["completed"]


def test_shaping_gives_intermediate_feedback():
    env = mara_env.raw_env(num_nodes=2, shaping=True, horizon=60)
    env.reset(seed=0)
    differs = False
    while env.agents:
        agent = env.agent_selection
        obs = env.observe(agent)
        env.step(int(np.flatnonzero(obs["action_mask"])[-1]))
        if env.slot.turn == 0 and env.agents:
            info = env.infos[agent]
            differs |= info["shaped_reward"] != info["completions"]
        if env.terminations.get(agent) or env.truncations.get(agent):
            break
    assert differs


def test_same_seed_same_episode_different_seed_different():
    def run(seed):
        return [{k: v for k, v in r.items() if k != "wall_seconds"} for r in mara_agents.evaluate("random", [seed])]

    assert run(7) == run(7)
    assert run(7) != run(8)


def test_termination_at_horizon_and_truncation_at_max_cycles():
    env = mara_env.env(num_nodes=2, horizon=5)
    env.reset(seed=0)
    played(env, actions_per_slot=0, slots=5)
    assert all(env.terminations.values()) and not any(env.truncations.values())
    assert env.infos["node_0"]["metrics"]["slots"] == 5
    env = mara_env.env(num_nodes=2, horizon=50, max_cycles=3)
    env.reset(seed=0)
    played(env, actions_per_slot=0, slots=3)
    assert all(env.truncations.values()) and not any(env.terminations.values())


def test_render_modes():
    env = mara_env.env(num_nodes=3, render_mode="ansi", horizon=20)
    env.reset(seed=0)
    played(env, slots=2)
    text = env.render()
    assert text.startswith("slot 2/20") and "best loss" in text
    env = mara_env.env(num_nodes=3, render_mode="rgb_array", horizon=20)
    env.reset(seed=0)
    played(env, slots=2)
    image = env.render()
    assert image.dtype == np.uint8 and image.ndim == 3 and image.shape[2] == 3
    trained = image[:, : 2 * 3]  # two slots of 3 pixels each
    assert (trained != 255).any() and (trained != 245).any()


def test_parallel_env_sees_no_earlier_choices():
    par = mara_env.parallel_env(num_nodes=4)
    obs, _ = par.reset(seed=0)
    for _ in range(3):
        for o in obs.values():
            assert np.all(decode(o).row("chosen_now") == 0)
        actions = {a: int(np.flatnonzero(o["action_mask"])[-1]) for a, o in obs.items()}
        obs, rewards, *_ = par.step(actions)
        assert len(set(rewards.values())) == 1  # one team reward


def test_cached_table_equals_a_fresh_build():
    from mara_env.observation import TableBuilder

    env = mara_env.raw_env(num_nodes=4, max_tasks=8, history_window=3, horizon=120)
    env.reset(seed=4)
    rng = np.random.default_rng(0)
    for _ in range(60):
        for _ in range(4):
            allowed = np.flatnonzero(env.observe(env.agent_selection)["action_mask"])
            env.step(int(rng.choice(allowed)))
        fresh = TableBuilder(env.layout).build(env.sim)
        np.testing.assert_array_equal(env.slot._tables.build(env.sim), fresh)
