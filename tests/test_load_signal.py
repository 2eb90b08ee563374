"""The ``arrival_rate`` global (a slow load signal) and the networks that read it, or do not."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import mara_agents
import mara_env
from mara_agents.heuristics import EDFUniformScheduler
from mara_agents.mara.checkpoint import load_checkpoint, save_checkpoint
from mara_agents.mara.network import MARANet
from mara_agents.mara.numpy_actor import NumpySlotEncoder, NumpyTurnHead
from mara_agents.mara.slot_network import SlotMARANet
from mara_agents.mara.teacher import Teacher, parse_teacher
from mara_agents.mara.teacher_rules import LoadSwitchScheduler
from mara_agents.srw import SRWScheduler
from mara_env.core import IDLE, LossCurve, SimConfig, Simulator, TaskSpec
from mara_env.env import live_turns
from mara_env.observation import GLOBAL_FEATURES, ObservationLayout, SlotObservations
from tests.numpy_parity import torch_turn

RATE = GLOBAL_FEATURES.index("arrival_rate")


def _task(task_id: int, arrival: int) -> TaskSpec:
    curve = LossCurve(2.0 - 0.01 * np.arange(100), work_step=1.0)
    return TaskSpec(task_id, arrival, arrival + 50, target=1.5, curve=curve)


def _slot_observations(tasks: list[TaskSpec], max_tasks: int = 4) -> tuple[Simulator, SlotObservations]:
    sim = Simulator(SimConfig(num_nodes=2, max_tasks=max_tasks, horizon=20), tasks)
    sim.reset()
    layout = ObservationLayout(num_nodes=2, max_tasks=max_tasks, history_window=2)
    return sim, SlotObservations(layout, forecasts=None)


def test_arrival_rate_counts_every_arrival_queued_or_not_per_slot_and_node():
    # three tasks at slot 0 and two at slot 2 on 2 nodes and 4 rows: one waits for a row from slot 2
    sim, slot = _slot_observations([_task(0, 0), _task(1, 0), _task(2, 0), _task(3, 2), _task(4, 2)])
    expected = {0: 3 / 1 / 2, 1: 3 / 2 / 2, 2: 5 / 3 / 2, 3: 5 / 4 / 2}
    for slot_index, rate in expected.items():
        slot.begin(sim)
        assert sim.slot == slot_index
        assert slot.globals[RATE] == pytest.approx(rate)
        assert slot.state()[4 + RATE] == pytest.approx(rate)  # the state's globals follow its 4 header entries
        sim.step([IDLE, IDLE])


def _env_with_tasks() -> mara_env.env.raw_env:
    """An env (2 nodes, 8 rows) idled until a task holds a row."""
    env = mara_env.raw_env(num_nodes=2, max_tasks=8, forecaster="none", load="heavy", horizon=40)
    env.reset(seed=3)
    while not env.observe(env.agent_selection)["action_mask"][1:].any():
        env.step(0)
    return env


def _vectors(rates: tuple[float, ...]) -> tuple[torch.Tensor, np.ndarray]:
    """An observation vector with ``arrival_rate`` set to each of ``rates``, and its action mask."""
    env = _env_with_tasks()
    observation = env.observe(env.agent_selection)
    batch = np.repeat(observation["observation"][None], len(rates), axis=0)
    batch[:, env.layout.slices["global"].start + RATE] = rates
    return torch.as_tensor(batch), observation["action_mask"].astype(np.float32)


def _states(rates: tuple[float, ...]) -> torch.Tensor:
    """The state of the same env with ``arrival_rate`` set to each of ``rates``."""
    env = _env_with_tasks()
    batch = np.repeat(env.state()[None], len(rates), axis=0)
    batch[:, env.layout.state_slices["global"].start + RATE] = rates
    return torch.as_tensor(batch)


def _differ(a: torch.Tensor, b: torch.Tensor) -> bool:
    return not torch.allclose(a, b, rtol=0.0, atol=1e-6)


@pytest.mark.parametrize("load_signal", [False, True])
def test_only_a_network_built_with_load_signal_reads_the_arrival_rate(load_signal):
    torch.manual_seed(0)
    net = SlotMARANet(width=16, layers=1, heads=2, load_signal=load_signal).eval()
    batch, _ = _vectors((0.01, 0.5))
    with torch.no_grad():
        pooled = net.encode(batch).pooled
        values = net.value(_states((0.01, 0.5)))
    assert _differ(pooled[0], pooled[1]) is load_signal
    assert _differ(values[0], values[1]) is load_signal


def test_the_joint_actor_never_reads_the_arrival_rate():
    torch.manual_seed(0)
    net = MARANet(width=16, layers=1, heads=2).eval()
    batch, mask = _vectors((0.01, 0.5))
    with torch.no_grad():
        logits = net.logits(batch, torch.as_tensor(mask).repeat(2, 1))
    assert not _differ(logits[0], logits[1])


def test_numpy_actor_reads_the_arrival_rate_as_the_torch_actor_does():
    torch.manual_seed(1)
    net = SlotMARANet(width=16, layers=1, heads=2, load_signal=True).eval()
    encoder, head = NumpySlotEncoder(net), NumpyTurnHead(net)
    batch, mask = _vectors((0.01, 0.5))
    for vector in batch.numpy():
        _, expected = torch_turn(net, vector, mask)
        got = head.logits(encoder(vector), vector, mask)
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


def test_a_load_signal_checkpoint_round_trips_and_an_old_config_reads_without_it(tmp_path):
    net = SlotMARANet(width=16, layers=1, heads=2, load_signal=True)
    loaded, _, _ = load_checkpoint(save_checkpoint(net, tmp_path / "load.pt", {"forecaster": "none"}))
    assert loaded.config["load_signal"] and loaded.context_index == net.context_index
    old = SlotMARANet(width=16, layers=1, heads=2)
    blob = {"config": {k: v for k, v in old.config.items() if k != "load_signal"}}  # written before the setting
    path = save_checkpoint(old, tmp_path / "old.pt", {"forecaster": "none"})
    saved = torch.load(path, weights_only=True)
    torch.save({**saved, **blob}, path)
    assert load_checkpoint(path)[0].config["load_signal"] is False


# ---------------------------------------------------------------- the load_switch teacher rule
SWITCH_ENV = {"num_nodes": 4, "max_tasks": 8, "horizon": 80, "workload": "tabular", "load": "heavy"}


def _plays(rate: float) -> tuple[list[int], list[int], list[str], list[float]]:
    """Actions of load_switch with ``rate`` and of the planner its path names on the same turns; its paths
    and the arrival rates of the turns with a row to train."""
    env = mara_env.raw_env(**SWITCH_ENV, forecaster="wls")
    env.reset(seed=2)
    rule, srw, edf_uniform = LoadSwitchScheduler(rate=rate), SRWScheduler(), EDFUniformScheduler()
    ours, theirs, paths, rates = [], [], [], []
    for agent in live_turns(env):
        observation = env.observe(agent)
        action = rule.act(observation, agent)
        planner = srw if rule.last_path == "srw" else edf_uniform
        ours.append(action)
        theirs.append(planner.act(observation, agent))
        if observation["action_mask"][1:].any():  # without a row to train it idles and chooses no path
            rates.append(float(observation["observation"][env.layout.slices["global"].start + RATE]))
            paths.append(rule.last_path)
        env.step(action)
    return ours, theirs, paths, rates


def test_load_switch_plays_srw_at_or_below_the_rate_and_edf_uniform_above():
    ours, theirs, paths, rates = _plays(rate=0.03)
    assert ours == theirs  # each turn is the move of the planner its path names
    assert {"srw", "edf"} <= set(paths)  # this episode crosses the rate
    assert all((path == "srw") == (rate <= 0.03) for path, rate in zip(paths, rates))


def test_load_switch_rate_must_be_positive_and_finite():
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="rate must be"):
            LoadSwitchScheduler(rate=bad)
    assert "load_switch" not in mara_agents.SCHEDULERS  # a teacher's rule, not a packaged scheduler


def test_a_teacher_corner_labels_big_tabular_episodes_with_load_switch():
    teacher = Teacher.for_env("best_shared+load_switch~tabular,17-64,0.7", {**SWITCH_ENV, "num_nodes": 24})
    assert teacher.sole_candidate() == "load_switch"
    teacher.reset(seed=0)
    assert isinstance(teacher.scheduler, LoadSwitchScheduler)
    small = Teacher.for_env("best_shared+load_switch~tabular,17-64,0.7", SWITCH_ENV)
    assert small.sole_candidate() is None  # 4 nodes: out of the corner, the candidates are played
    with pytest.raises(ValueError):
        parse_teacher("best_shared+load_swich~tabular,17-64,0.7")  # a misspelt rule names no agent
