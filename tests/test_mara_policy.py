"""The MARA policy's pieces: network shapes and masks, GAE by hand, checkpoints, the smoke run."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import mara_agents
import mara_env
from mara_agents.base import EnvRequirements
from mara_agents.mara.advantages import gae
from mara_agents.mara.checkpoint import load_checkpoint, save_checkpoint
from mara_agents.mara.guidance import guide_weight
from mara_agents.mara.network import MARANet
from mara_agents.mara.ppo import PPOConfig
from mara_agents.mara.scheduler import MARAScheduler
from mara_env.env import live_turns
from tests.scripts import load_script

ROOT = Path(__file__).resolve().parents[1]


def observation(num_nodes=4, max_tasks=8):
    env = mara_env.raw_env(num_nodes=num_nodes, max_tasks=max_tasks, forecaster="none", horizon=60)
    env.reset(seed=0)
    for _ in range(12 * num_nodes):
        obs = env.observe(env.agent_selection)
        env.step(int(np.flatnonzero(obs["action_mask"])[-1]))
    return env, env.observe(env.agent_selection)


@pytest.mark.parametrize("num_nodes, max_tasks", [(1, 4), (4, 8), (8, 32)])
def test_logits_cover_idle_and_rows_and_respect_masks(num_nodes, max_tasks):
    env, obs = observation(num_nodes, max_tasks)
    net = MARANet()
    x, m = torch.as_tensor(obs["observation"])[None], torch.as_tensor(obs["action_mask"])[None].float()
    logits = net.logits(x, m, max_tasks)
    assert logits.shape == (1, max_tasks + 1)
    assert torch.all(torch.isinf(logits[m == 0])) and torch.all(torch.isfinite(logits[m == 1]))
    assert net.value(torch.as_tensor(env.state())[None], num_nodes, max_tasks).shape == (1,)


def test_gae_hand_computed():
    # one env, three turns, episode ends after turn 1; gamma 1, lambda 0.5
    rewards = np.array([[0.0], [1.0], [2.0]])
    values = np.array([[0.5], [0.2], [1.0]])
    dones = np.array([[0.0], [1.0], [0.0]])
    adv, ret = gae(rewards, values, dones, last_value=np.array([3.0]), gamma=1.0, lam=0.5)
    # t=2: 2 + 3 - 1 = 4; t=1: 1 - 0.2 = 0.8 (no bootstrap); t=0: (0 + 0.2 - 0.5) + 0.5 * 0.8 = 0.1
    np.testing.assert_allclose(adv[:, 0], [0.1, 0.8, 4.0])
    np.testing.assert_allclose(ret, adv + values)


def test_guide_weight_anneals_to_its_floor():
    # coef 0.5 annealed to 0 by half of 10 iterations: iteration i weighs 0.5 * (1 - (i - 1) / 5)
    config = PPOConfig(guide_coef=0.5, guide_until=0.5)
    assert [round(guide_weight(config, i, 10), 6) for i in (1, 2, 4, 6, 10)] == [0.5, 0.4, 0.2, 0.0, 0.0]
    config.guide_floor = 0.25  # the floor holds from iteration 3 (0.3 > 0.25 > 0.2) to the end
    assert [round(guide_weight(config, i, 10), 6) for i in (1, 2, 3, 4, 10)] == [0.5, 0.4, 0.3, 0.25, 0.25]


def test_checkpoint_round_trip_and_scheduler(tmp_path):
    net = MARANet(width=32, layers=1)
    path = save_checkpoint(net, tmp_path / "c.pt", {"forecaster": "none", "num_nodes": 4})
    loaded, env, _ = load_checkpoint(path)
    for a, b in zip(net.state_dict().values(), loaded.state_dict().values()):
        assert torch.equal(a, b)
    scheduler = MARAScheduler(path)
    assert scheduler.requirements == EnvRequirements(False, "none", {"history_window": 8})
    records = mara_agents.evaluate(scheduler, [0], num_nodes=4, horizon=60)  # masked actions would raise
    assert records[0]["arrived"] > 0


class Payload:
    """An object safe loading must refuse to unpickle."""


@pytest.mark.parametrize("damage", ["missing", "truncated", "pickled object", "mismatch"])
def test_bad_checkpoints_are_refused(tmp_path, damage):
    path = tmp_path / "c.pt"
    if damage == "truncated":
        save_checkpoint(MARANet(), path, {})
        path.write_bytes(path.read_bytes()[:300])
    elif damage == "pickled object":
        torch.save({"format": "mara-policy-v1", "x": Payload()}, path)
    elif damage == "mismatch":
        blob = {
            "format": "mara-policy-v1",
            "config": {"history_window": 8, "width": 32, "layers": 1, "heads": 4},
            "state_dict": MARANet().state_dict(),
        }
        torch.save(blob, path)
    with pytest.raises(ValueError, match="MARA checkpoint"):
        load_checkpoint(path)


def test_quick_training_run(tmp_path):
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "train_mara.py"), "--quick", "--out", str(tmp_path / "run")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert (tmp_path / "run" / "checkpoint.pt").is_file()
    log = (tmp_path / "run" / "log.csv").read_text().splitlines()
    assert len(log) >= 3 and "approx_kl" in log[0] and "explained_variance" in log[0]


def test_quick_generalist_run_pads_to_the_largest_scenario(tmp_path):
    """Scenarios hold up to 24 rows while the evaluation env has 16: cloning, rollouts and updates
    must all read the padded size (reading the env's 16 crashed the first rollout)."""
    run = tmp_path / "run"
    command = [sys.executable, str(ROOT / "examples" / "train_mara.py"), "--quick", "--generalist", "--out", str(run),
               "--gate-rounds", "1", "--gate-episodes", "3",
               "--action-rounds", "1", "--action-episodes", "2", "--turns", "1024", "--envs", "4"]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=400)
    assert done.returncode == 0, done.stderr[-2000:]
    warm = json.loads((run / "warm_start.json").read_text())
    assert warm["turns"] > 0 and (run / "checkpoint.pt").is_file()
    # DAgger on the gate after the warm start: only the gate's layers moved, and PPO started from them
    gate = json.loads((run / "warm_start_gate.json").read_text())
    assert [r["round"] for r in gate["rounds"]] == [1] and gate["rounds"][0]["slots"] > 0
    cloned, tuned = (load_checkpoint(run / name)[0].state_dict() for name in ("warm_start.pt", "warm_start_gate.pt"))
    moved = {name for name in cloned if not torch.equal(cloned[name], tuned[name])}
    assert moved and moved <= {"gate.weight", "gate.bias"}
    assert (run / "warm_start_gate_labels.npz").is_file()
    # then DAgger on every turn, from the gate-fitted network: the whole actor moved
    dagger = json.loads((run / "warm_start_dagger.json").read_text())
    assert [r["round"] for r in dagger["rounds"]] == [1] and dagger["rounds"][0]["turns"] > 0
    refit = load_checkpoint(run / "warm_start_dagger.pt")[0].state_dict()
    assert {name for name in tuned if not torch.equal(tuned[name], refit[name])} - {"gate.weight", "gate.bias"}
    assert len((run / "log.csv").read_text().splitlines()) >= 3  # a header and PPO iterations
    config = json.loads((run / "config.json").read_text())
    assert config["architecture"] == "slot" and config["planner_hints"] is True
    # the generalist reads flow_fixed forecasts unless --forecaster says otherwise, in every scenario too
    assert config["env"]["forecaster"] == config["scenarios"]["fixed"]["forecaster"] == "flow_fixed"
    assert config["scenarios"]["warmup"] is True  # big clusters warmed up by a planner (--no-warmup: off)
    teacher = "best_shared+uniform+fifth_generalist@16+ninth_generalist+thirtieth_generalist"
    corners = "edf_uniform~rl,2,0.7+edf_uniform~tabular,2-16,0.7"
    assert config["pick_hints"] is True and config["teacher"] == f"{teacher}+edf_uniform+{corners}"
    # the default run's recipe holds in a quick run too, but for the focus (--quick draws 2-6 nodes)
    assert config["uniform_pick"] is True and config["gate_coef"] == 0.5
    assert config["scenarios"]["mixed_warmup"] is True and config["scenarios"]["random_window"] is True
    assert config["scenarios"]["focus"] is None
    assert config["row_buckets"] is True and config["scenarios"]["max_tasks_cap"] == 24  # --quick's small tables
    assert sorted(path.name for path in (run / "checkpoints").glob("*.pt"))  # every evaluated checkpoint kept


def _train_mara_config(monkeypatch, *argv: str):
    """The PPOConfig that ``examples/train_mara.py ARGV`` would train with (nothing is trained)."""
    module = load_script("examples/train_mara.py")
    monkeypatch.setattr(sys, "argv", ["train_mara.py", *argv])
    return module.configure(module.parse_args())


def test_max_rows_sets_the_largest_table_a_training_scenario_draws(monkeypatch):
    assert _train_mara_config(monkeypatch, "--generalist").scenarios.max_tasks_cap == 128
    assert _train_mara_config(monkeypatch, "--generalist", "--max-rows", "64").scenarios.max_tasks_cap == 64
    # fewer rows than the largest cluster's nodes is refused, naming the option and the value
    with pytest.raises(SystemExit, match=r"--max-rows: .*\(32: at least one row per node\)"):
        _train_mara_config(monkeypatch, "--generalist", "--max-rows", "32")


def test_row_buckets_are_on_for_the_generalist_unless_turned_off(monkeypatch):
    assert _train_mara_config(monkeypatch, "--generalist").row_buckets is True
    assert _train_mara_config(monkeypatch, "--generalist", "--no-row-buckets").row_buckets is False
    assert _train_mara_config(monkeypatch).row_buckets is False  # the single-scenario run
    assert _train_mara_config(monkeypatch, "--row-buckets").row_buckets is True


def test_guide_floor_is_set_and_checked(monkeypatch):
    assert _train_mara_config(monkeypatch, "--generalist").guide_floor == 0.0
    assert _train_mara_config(monkeypatch, "--generalist", "--guide-floor", "0.25").guide_floor == 0.25
    with pytest.raises(SystemExit, match=r"--guide-floor must lie in \[0, 0.5\].*got 0.9"):
        _train_mara_config(monkeypatch, "--guide-floor", "0.9")
    with pytest.raises(SystemExit, match=r"needs a teacher; got 0.1 with teacher None"):
        _train_mara_config(monkeypatch, "--teacher", "none", "--guide-floor", "0.1")


def test_shipped_checkpoint_is_registered_as_mara_and_plays():
    from mara_agents.mara.scheduler import SHIPPED_CHECKPOINT

    assert SHIPPED_CHECKPOINT.stat().st_size < 10 * 1024 * 1024
    scheduler = mara_agents.make("mara")
    assert isinstance(scheduler, MARAScheduler) and scheduler.deterministic
    assert scheduler.requirements == EnvRequirements(True, "flow", {"history_window": 8})
    record = mara_agents.evaluate(scheduler, [0], num_nodes=8, horizon=60)[0]
    assert record["completed"] + record["expired"] == record["arrived"] > 0
    sampled = mara_agents.make("mara", deterministic=False)
    assert not sampled.deterministic


def test_shipped_generalist_plays_any_cluster_size():
    from mara_agents.mara.scheduler import GENERALIST_CHECKPOINT
    from mara_agents.mara.slot_network import SlotMARANet

    assert GENERALIST_CHECKPOINT.stat().st_size < 10 * 1024 * 1024
    scheduler = mara_agents.make("mara_generalist")
    assert isinstance(scheduler.net, SlotMARANet) and scheduler.net.config["planner_hints"]
    assert scheduler.net.config["pick_hints"]
    assert scheduler.requirements.forecaster == "flow_fixed"
    for nodes, rows in [(3, 8), (12, 40)]:
        record = mara_agents.evaluate(scheduler, [1], num_nodes=nodes, max_tasks=rows, horizon=40)[0]
        assert record["completed"] + record["expired"] <= record["arrived"] and record["arrived"] > 0
        assert record["invalid_actions"] == 0 and record["completed"] > 0


def test_importing_the_agents_does_not_load_torch():
    code = "import sys, mara_agents; mara_agents.make('lara'); print('torch' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


def test_own_row_marks_the_row_this_node_trained_last_slot():
    from mara_agents.mara.network import own_row

    node = torch.tensor([[0.0, 1.0, 1.0, 3 / 8], [0.0, 1.0, 1.0, 0.0]])  # last_action 3 -> row 2; 0 = idle
    expected = torch.zeros(2, 8)
    expected[0, 2] = 1.0
    assert torch.equal(own_row(node, 8), expected)


@pytest.mark.parametrize("autoregressive", [True, False])
def test_non_autoregressive_actor_ignores_earlier_choices(autoregressive):
    from mara_env.observation import decode

    _, obs = observation(4, 8)
    torch.manual_seed(0)
    net = MARANet(width=32, layers=1, autoregressive=autoregressive)
    before = torch.as_tensor(obs["observation"])[None]
    changed = obs["observation"].copy()
    decode(changed).row("chosen_now")[:] = 0.75  # a view: earlier nodes all chose every row
    mask = torch.as_tensor(obs["action_mask"])[None].float()
    same = torch.allclose(net.logits(before, mask, 8), net.logits(torch.as_tensor(changed)[None], mask, 8))
    assert same is not autoregressive


@pytest.mark.parametrize("env_forecaster", ["flow", "none"])
def test_srw_teacher_plays_exactly_like_srw_whatever_the_env_forecaster(env_forecaster):
    from mara_agents.mara.teacher import Teacher

    env = mara_env.raw_env(forecaster=env_forecaster, horizon=60, curve_split="test")
    env.reset(seed=3)
    teacher = Teacher("srw", env_forecaster=env_forecaster)
    teacher.reset(3)
    for agent in live_turns(env):
        env.step(teacher.action(env, env.observe(agent)))
    srw = mara_agents.evaluate("srw", [3], horizon=60)[0]
    assert env.sim.metrics()["completed"] == srw["completed"]
    assert env.sim.metrics()["completion_rate"] == pytest.approx(srw["completion_rate"])


def test_unknown_teacher_is_refused():
    from mara_agents.mara.teacher import Teacher

    with pytest.raises(ValueError, match="teacher must be one of"):
        Teacher("edf")
    with pytest.raises(ValueError, match="pass env_kwargs"):
        Teacher("best")


@pytest.mark.parametrize("workload", ["rl", "synthetic"])
def test_best_teacher_labels_with_the_winner_of_the_episode(workload):
    """The ``best`` teacher picks whichever of srw and edf completes more of that very episode, and
    then plays exactly like it. Seed 0 at the heavy load: edf wins on rl, srw on synthetic."""
    from mara_agents.mara.teacher import Teacher

    settings = {"num_nodes": 4, "max_tasks": 8, "horizon": 60, "workload": workload, "curve_split": "test"}
    settings["load"] = "heavy"
    rates = {name: mara_agents.evaluate(name, [0], **settings)[0]["completion_rate"] for name in ("srw", "edf")}
    assert rates["srw"] != rates["edf"]  # the choice matters in this episode
    teacher = Teacher.for_env("best", {**settings, "forecaster": "flow"})
    teacher.reset(0)
    assert teacher.chosen == max(rates, key=rates.get)
    env = mara_env.raw_env(**settings, forecaster="flow")
    env.reset(seed=0)
    for agent in live_turns(env):
        env.step(teacher.action(env, env.observe(agent)))
    assert env.sim.metrics()["completion_rate"] == pytest.approx(rates[teacher.chosen])


def _play_on(env, scheduler, seed):
    env.reset(seed=seed)
    scheduler.reset(seed)
    for agent in live_turns(env):
        env.step(scheduler.act(env.observe(agent), agent))
    return env.sim.metrics()["completion_rate"]


def _play_labels_checked(teacher, settings: dict, seed: int, planner) -> float:
    """Play the episode with ``teacher``'s labels, checking each is ``planner``'s action on that very
    observation; the episode's completion rate."""
    env = mara_env.raw_env(**settings)
    env.reset(seed=seed)
    planner.reset(seed)
    for agent in live_turns(env):
        observation = env.observe(agent)
        label = teacher.action(env, observation)
        assert label == planner.act(observation, agent)
        env.step(label)
    return env.sim.metrics()["completion_rate"]


def test_best_shared_teacher_plans_srw_on_the_students_forecasts():
    """``best_shared`` chooses and labels with srw reading the env's own (flow_fixed) forecast columns,
    not its own flow draws, so its srw labels are srw's actions on the very observation the student gets."""
    from mara_agents.mara.teacher import Teacher

    settings = {"num_nodes": 4, "max_tasks": 8, "horizon": 60, "workload": "synthetic", "curve_split": "test"}
    settings.update(load="heavy", forecaster="flow_fixed")
    rates = {name: _play_on(mara_env.raw_env(**settings), mara_agents.make(name), 0) for name in ("srw", "edf")}
    assert rates["srw"] != rates["edf"]
    teacher = Teacher.for_env("best_shared", settings)
    teacher.reset(0)
    assert teacher.chosen == max(rates, key=rates.get) == "srw" and teacher._truth is None
    own = Teacher.for_env("best", settings)
    own.reset(0)
    assert own._truth is not None  # plain best brings its own flow forecasts
    assert _play_labels_checked(teacher, settings, 0, mara_agents.make("srw")) == pytest.approx(rates["srw"])


def test_a_best_teacher_takes_extra_candidates_and_labels_with_their_play():
    """``best_shared+oracle``: the oracle completes more of this episode than srw and edf, so the
    teacher labels with it, reading the true remaining work (its own forecasts), not the env's columns."""
    from mara_agents.mara.teacher import Teacher

    settings = {"num_nodes": 4, "max_tasks": 8, "horizon": 60, "workload": "rl", "curve_split": "test"}
    settings.update(load="heavy", forecaster="flow_fixed")
    rates = {name: _play_on(mara_env.raw_env(**settings), mara_agents.make(name), 1) for name in ("srw", "edf")}
    oracle_settings = {**settings, "forecaster": "oracle"}
    rates["oracle"] = _play_on(mara_env.raw_env(**oracle_settings), mara_agents.make("oracle"), 1)
    assert rates["oracle"] > max(rates["srw"], rates["edf"])  # the extra candidate is the one that wins
    teacher = Teacher.for_env("best_shared+oracle", settings)
    assert teacher.candidates == ("srw", "edf", "oracle")
    teacher.reset(1)
    assert teacher.chosen == "oracle" and teacher._truth is not None
    env = mara_env.raw_env(**settings)
    env.reset(seed=1)
    for agent in live_turns(env):
        env.step(teacher.action(env, env.observe(agent)))
    assert env.sim.metrics()["completion_rate"] == pytest.approx(rates["oracle"])


def test_the_generalist_aliases_name_their_shipped_weights():
    """Teacher names hold ``fifth_generalist`` and the like, not a path; each resolves to shipped teacher weights."""
    from mara_agents.mara import scheduler
    from mara_agents.mara.scheduler import FIFTH_GENERALIST_CHECKPOINT
    from mara_agents.mara.teacher import parse_teacher, split_gate

    assert split_gate("fifth_generalist@16") == (f"mara_generalist:{FIFTH_GENERALIST_CHECKPOINT}", 16)
    assert split_gate("ninth_generalist") == (f"mara_generalist:{scheduler.NINTH_GENERALIST_CHECKPOINT}", None)
    assert split_gate("thirtieth_generalist") == (f"mara_generalist:{scheduler.THIRTIETH_GENERALIST_CHECKPOINT}", None)
    for checkpoint in (scheduler.NINTH_GENERALIST_CHECKPOINT, scheduler.THIRTIETH_GENERALIST_CHECKPOINT):
        assert checkpoint.is_file() and checkpoint != scheduler.GENERALIST_CHECKPOINT
    assert split_gate("uniform") == ("uniform", None)
    assert split_gate("srw@flow_situ") == ("srw@flow_situ", None)  # a forecaster, not a size
    assert split_gate("srw@wls@8") == ("srw@wls", 8)
    assert parse_teacher("best_shared+fifth_generalist@16")[1] == ("srw", "edf", "fifth_generalist@16")
    assert mara_agents.make("mara_generalist", checkpoint=str(FIFTH_GENERALIST_CHECKPOINT)) is not None


def test_a_size_gated_candidate_plays_only_on_clusters_small_enough():
    """``oracle@N`` wins this 4-node episode when N >= 4 and is not a candidate when N < 4."""
    from mara_agents.mara.teacher import Teacher

    settings = {"num_nodes": 4, "max_tasks": 8, "horizon": 60, "workload": "rl", "curve_split": "test"}
    settings.update(load="heavy", forecaster="flow_fixed")
    for gate, chosen in ((4, "oracle"), (3, None)):
        teacher = Teacher.for_env(f"best_shared+oracle@{gate}", settings)
        teacher.reset(1)
        if chosen is None:
            assert teacher.chosen in ("srw", "edf")
        else:
            assert teacher.chosen == chosen
        # every candidate's rate on that very episode; the gated one plays only where it is allowed
        played = {name: rate for name, rate, _ in teacher.play_candidates(1)}
        assert list(played) == (["srw", "edf", "oracle"] if chosen else ["srw", "edf"])
        assert teacher.chosen == max(played, key=played.get) and all(0 <= r <= 1 for r in played.values())


def test_a_corner_candidate_labels_alone_in_its_corner_and_nowhere_else():
    """``uniform~rl,4,2.0``: on a 4-node ``rl`` episode at the heavy load (2.1) uniform labels alone, with
    uniform's own actions and its gate path, and nothing is played; below the load, under the size or on
    another workload the ordinary candidates compete and uniform is not among them."""
    from mara_agents.mara.gate_paths import GATE_PATHS
    from mara_agents.mara.teacher import Corner, Teacher

    settings = {"num_nodes": 4, "max_tasks": 8, "horizon": 40, "workload": "rl", "curve_split": "test"}
    settings.update(load="heavy", forecaster="flow_fixed")
    teacher = Teacher.for_env("best_shared+uniform~rl,4,2.0", settings)
    assert teacher.candidates == ("srw", "edf") and teacher.corners == (("uniform", Corner("rl", 4, 2.0)),)
    teacher.reset(2)
    assert teacher.chosen == "uniform" and teacher.path() == GATE_PATHS.index("uniform")
    assert teacher.episode_rates is None  # no candidate was played
    _play_labels_checked(teacher, settings, 2, mara_agents.make("uniform"))
    for outside in ({"load": 2.0 - 1e-9}, {"num_nodes": 3}, {"workload": "synthetic"}, {"load": "train"}):
        other = Teacher.for_env("best_shared+uniform~rl,4,2.0", {**settings, **outside})
        other.reset(2)
        assert other.chosen in ("srw", "edf") and len(other.episode_rates) == 2


def test_a_corner_with_a_node_range_holds_from_its_low_to_its_high_end():
    """``tabular,2-16,0.7``: 2 and 16 nodes are in, 1 and 17 are out; without a range there is no top."""
    from mara_agents.mara.teacher import Corner

    corner = Corner.parse("tabular,2-16,0.7", "edf_uniform~tabular,2-16,0.7")
    assert corner == Corner("tabular", 2, 0.7, 16)
    inside = {"workload": "tabular", "load": 0.7}
    assert [corner.holds({**inside, "num_nodes": n}) for n in (1, 2, 16, 17)] == [False, True, True, False]
    assert Corner.parse("tabular,2,0.7", "x").holds({**inside, "num_nodes": 64})


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("best_shared+uniform~rl", "after '~' give WORKLOAD,N,LOAD"),
        ("best_shared+uniform~rl,24", "after '~' give WORKLOAD,N,LOAD"),
        ("best_shared+uniform~nope,24,2.1", "workload 'nope' is not registered"),
        ("best_shared+uniform~rl,many,2.1", "after '~' give WORKLOAD,N,LOAD"),
        ("best_shared+uniform~rl,0,2.1", "nodes >= 1"),
        ("best_shared+uniform~rl,24,-1", "a load > 0"),
        ("best_shared+uniform~rl,24,inf", "a load > 0"),
        ("best_shared+uniform~rl,24,nan", "a load > 0"),
        ("best_shared+uniform~rl,16-2,2.1", "1 <= LO <= HI"),
        ("best_shared+uniform~rl,2-,2.1", "a range LO-HI"),
        ("best_shared+uniform~rl,-16,2.1", "a range LO-HI"),
        ("best_shared+uniform@16~rl,24,2.1", "takes no '@N'"),
        ("best_shared+no_such_agent~rl,24,2.1", "unknown agent"),
        ("srw+edf", "only .* take extra candidates"),
        ("best_shared+no_such_agent", "unknown agent"),
        ("best_shared+mara:no/such/checkpoint.pt", "is not a file"),
        ("nobody", "teacher must be one of"),
        ("best_shared+oracle@", "the most nodes it plays on"),
        ("best_shared+oracle@0", "the most nodes it plays on"),
        ("best_shared+oracle@many", "the most nodes it plays on"),
    ],
)
def test_a_teacher_with_bad_candidates_is_refused(name, message):
    from mara_agents.mara.teacher import parse_teacher

    with pytest.raises(ValueError, match=message):
        parse_teacher(name)


FORKED_MARA_TEACHER = """
import torch
from mara_agents.mara.imitation import collect_demonstrations
from mara_agents.mara.workers import WorkerPool

torch.randn(256, 256) @ torch.randn(256, 256)  # the parent runs torch's thread pool before forking
env = {"num_nodes": 3, "max_tasks": 6, "horizon": 12, "forecaster": "flow_fixed", "curve_split": "train"}
teacher = "best_shared+mara_generalist"  # a candidate whose network is built in each worker
demos = collect_demonstrations(env, teacher, [0, 1], processes=2, progress=False)
pool = WorkerPool(2, env, seed=0, processes=2, teacher=teacher)
turns = pool.observe()
pool.close()
print(len(demos.actions), len(turns))
"""


def test_forked_workers_can_run_a_mara_teacher_candidate():
    """Forked after the parent ran torch's thread pool, a worker used to hang at its first multi-threaded
    torch op; the workers now start on one torch thread (a subprocess, so a hang fails by timeout)."""
    done = subprocess.run([sys.executable, "-c", FORKED_MARA_TEACHER], capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-2000:]
    demo_turns, observed = map(int, done.stdout.split())
    assert demo_turns > 0 and observed == 2


def test_demonstrations_returns_count_completions_and_cloning_fits_them():
    from mara_agents.mara.imitation import clone, collect_demonstrations, play_teacher_episode

    env = {"num_nodes": 4, "max_tasks": 8, "horizon": 60, "shaping": False, "forecaster": "none"}
    for seed in (0, 1):
        returns = play_teacher_episode(env, "lara", seed)[4]
        record = mara_agents.evaluate("lara", [seed], **env, curve_split="train")[0]
        assert returns[0] == record["completed"] > 0  # unshaped, gamma 1: the whole return = completions
        assert np.all(np.diff(returns) <= 0)  # completions still to come only fall
    demos = collect_demonstrations(env, "lara", [0, 1], processes=1, progress=False)
    torch.manual_seed(0)
    net = MARANet(width=32, layers=1)
    first = clone(net, demos, 4, 8, epochs=1, seed=0, progress=False)
    later = clone(net, demos, 4, 8, epochs=4, seed=0, progress=False)
    assert later["bc_loss"] < first["bc_loss"] and later["bc_accuracy"] > 0.6


def test_worker_pool_spreads_copies_and_labels_turns():
    from mara_agents.mara.workers import WorkerPool

    env = {"num_nodes": 2, "max_tasks": 4, "horizon": 10, "forecaster": "none"}
    pool = WorkerPool(3, env, seed=0, processes=2, teacher="lara")
    try:
        turns = pool.observe()
        assert len(turns) == 3 and [len(s) for s in pool.shares] == [2, 1]
        for _ in range(25):  # past the 20 turns of an episode: every copy resets at least once
            turns = pool.step(np.array([t.label for t in turns]))  # play the teacher's labels
            for obs, mask, _state, label, *_ in turns:
                assert mask[label] == 1 and obs.shape == (mara_env.observation.layout_of(obs).size,)
    finally:
        pool.close()


def test_generalist_ablation_bench_names_a_malformed_or_missing_variant(tmp_path):
    script = str(ROOT / "benchmarks" / "mara_generalist_ablations.py")
    for variant, message in [("wls", "NAME=CHECKPOINT"), (f"wls={tmp_path / 'no.pt'}", "no checkpoint file")]:
        command = [sys.executable, script, "--variants", variant]
        done = subprocess.run(command, capture_output=True, text=True, timeout=120)
        assert done.returncode == 2 and message in done.stderr, done.stderr[-1000:]


def test_train_mara_teacher_also_takes_a_corner_and_refuses_a_bad_one(monkeypatch):
    from mara_agents.mara.teacher import GENERALIST_TEACHER

    config = _train_mara_config(monkeypatch, "--generalist", "--teacher-also", "uniform~rl,24,2.1")
    assert config.teacher == f"{GENERALIST_TEACHER}+uniform~rl,24,2.1"
    with pytest.raises(SystemExit, match=r"--teacher-also: candidate 'uniform~rl,24': .*e\.g\. rl,24,2\.1"):
        _train_mara_config(monkeypatch, "--generalist", "--teacher-also", "uniform~rl,24")
