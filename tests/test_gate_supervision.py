"""Gate supervision: the hinted slot actor's gate fitted to the planner a ``best`` teacher follows."""

from __future__ import annotations

import math
import sys
from dataclasses import replace

import numpy as np
import pytest
import torch

from mara_agents.mara.checkpoint import load_checkpoint
from mara_agents.mara.gate_edits import PATH_PARAMETERS, pin_gate, scale_paths
from mara_agents.mara.gate_paths import GATE_PATHS, gate_loss
from mara_agents.mara.guidance import gate_weight
from mara_agents.mara.imitation import check_gate_supervision, clone, collect_demonstrations
from mara_agents.mara.network import MARANet
from mara_agents.mara.ppo import PPOConfig
from mara_agents.mara.slot_network import SlotMARANet
from mara_agents.mara.teacher import Teacher
from mara_agents.mara.workers import WorkerPool
from tests.scripts import ROOT, run_script
from tests.test_mara_policy import _train_mara_config

ENV = {"num_nodes": 4, "max_tasks": 8, "horizon": 30, "forecaster": "wls", "curve_split": "train", "shaping": True}


def _net(**changes) -> SlotMARANet:
    torch.manual_seed(0)
    return SlotMARANet(width=16, layers=1, heads=2, planner_hints=True, pick_hints=True, **changes)


def test_gate_loss_is_the_mean_negative_log_weight_of_the_labelled_paths():
    weights = torch.tensor([[0.8, 0.2, 0.0], [0.3, 0.6, 0.1], [0.5, 0.5, 0.0], [0.2, 0.4, 0.4]])
    paths = torch.tensor([0, 1, -1, 2])  # srw, edf, no planner, uniform
    without_uniform = -(math.log(0.8) + math.log(0.6)) / 2
    assert gate_loss(weights, paths, uniform_path=False).item() == pytest.approx(without_uniform)
    with_uniform = -(math.log(0.8) + math.log(0.6) + math.log(0.4)) / 3
    assert gate_loss(weights, paths, uniform_path=True).item() == pytest.approx(with_uniform)
    nothing = gate_loss(weights.requires_grad_(), torch.tensor([-1, -1, 2, -1]), uniform_path=False)
    assert nothing.item() == 0.0
    nothing.backward()  # a batch with no label still backpropagates (a zero gradient)
    assert torch.count_nonzero(weights.grad) == 0


def test_path_weights_are_the_gates_mix_of_the_skip_paths():
    net = _net(uniform_pick=True)
    with torch.no_grad():
        net.gate.bias.copy_(torch.tensor([math.log(2.0), math.log(3.0)]))  # srw, uniform against edf's 0
    observation = _demos(seeds=[0]).obs.batch([0])
    mask = torch.ones(1, ENV["max_tasks"] + 1)
    _, weights = net.logits_and_paths(observation, mask)
    assert weights[0].tolist() == pytest.approx([2 / 6, 1 / 6, 3 / 6], abs=1e-6)  # softmax of (log 2, 0, log 3)


@pytest.mark.parametrize(
    ("uniform", "path", "expected"),
    [
        (False, "srw", [1, 0, 0]),
        (False, "edf", [0, 1, 0]),
        (True, "srw", [1, 0, 0]),
        (True, "edf", [0, 1, 0]),
        (True, "uniform", [0, 0, 1]),
    ],
)
def test_a_pinned_gate_gives_its_path_all_the_weight_and_leaves_the_network_alone(uniform, path, expected):
    net = _net(uniform_pick=uniform)
    with torch.no_grad():
        net.gate.weight.normal_()  # a gate that reads the slot, as a trained one does
    before = {name: value.clone() for name, value in net.state_dict().items()}
    observation = _demos(seeds=[0]).obs.batch(range(5))
    mask = torch.ones(5, ENV["max_tasks"] + 1)
    _, weights = pin_gate(net, path).logits_and_paths(observation, mask)
    assert np.allclose(weights.detach().numpy(), np.array([expected] * 5), rtol=0, atol=1e-9)
    assert all(torch.equal(before[name], value) for name, value in net.state_dict().items())


def test_pin_gate_refuses_a_path_the_network_lacks():
    with pytest.raises(ValueError, match="uniform"):
        pin_gate(_net(), "uniform")  # no uniform pick: two paths only
    with pytest.raises(ValueError, match="one of"):
        pin_gate(_net(uniform_pick=True), "oracle")
    torch.manual_seed(0)
    with pytest.raises(ValueError, match="planner hints"):
        pin_gate(SlotMARANet(width=16, layers=1, heads=2), "srw")


def _demos(seeds: list[int]):
    return collect_demonstrations(ENV, "best_shared", seeds, processes=1, progress=False)


def test_demonstrations_record_the_planner_each_episode_follows():
    demos = _demos(seeds=[0, 1, 2])
    expected = []
    for seed in (0, 1, 2):
        teacher = Teacher.for_env("best_shared", ENV)
        teacher.reset(seed)
        assert teacher.chosen in ("srw", "edf")
        expected.append(GATE_PATHS.index(teacher.chosen))
    first = 0
    for seed, path in enumerate(expected):  # the episodes' turns, in seed order
        turns = len(collect_demonstrations(ENV, "best_shared", [seed], processes=1, progress=False))
        assert set(demos.paths[first : first + turns]) == {path}
        first += turns
    assert first == len(demos)
    assert Teacher.for_env("srw", ENV).path() == -1  # not a best teacher: no planner to follow


def test_supervised_cloning_moves_the_gate_to_the_labelled_path():
    demos = _demos(seeds=[0, 1])
    demos = replace(demos, paths=np.full(len(demos), GATE_PATHS.index("edf")))  # every turn: follow edf
    weights = {}
    for coef in (0.0, 2.0):
        net = _net()
        stats = clone(
            net, demos, 4, 8, epochs=4, batch_size=32, learning_rate=1e-2, seed=0, progress=False, gate_coef=coef
        )
        with torch.no_grad():
            weights[coef] = float(
                net.logits_and_paths(torch.as_tensor(demos.obs.full()), torch.as_tensor(demos.masks))[1][:, 1].mean()
            )
        assert (stats["gate_loss"] > 0) == (coef > 0)
    assert weights[2.0] > 0.9 and weights[2.0] > weights[0.0] + 0.2


def test_gate_supervision_refuses_what_it_cannot_fit():
    demos = _demos(seeds=[0])
    assert check_gate_supervision(_net(), demos, 0.0) is False
    assert check_gate_supervision(_net(), demos, 0.5) is True
    with pytest.raises(ValueError, match="gate_coef must be >= 0"):
        check_gate_supervision(_net(), demos, -1.0)
    with pytest.raises(ValueError, match="needs a slot actor with planner hints"):
        check_gate_supervision(MARANet(width=16, layers=1), demos, 0.5)
    with pytest.raises(ValueError, match="needs a slot actor with planner hints"):
        check_gate_supervision(SlotMARANet(width=16, layers=1, heads=2), demos, 0.5)
    with pytest.raises(ValueError, match="needs demonstrations with paths"):
        check_gate_supervision(_net(), replace(demos, paths=None), 0.5)


def test_rollout_turns_carry_the_teachers_path():
    pool = WorkerPool(2, ENV, seed=0, processes=1, teacher="best_shared")
    try:
        turns = pool.observe()
        for _ in range(150):  # past an episode's end: a new episode may follow the other planner
            assert all(turn.path in (0, 1) and turn.mask[turn.label] == 1 for turn in turns)
            turns = pool.step(np.array([turn.label for turn in turns]))
    finally:
        pool.close()
    pool = WorkerPool(1, ENV, seed=0, processes=1, teacher="srw")
    try:
        assert pool.observe()[0].path == -1
    finally:
        pool.close()


def test_the_gate_weight_anneals_with_the_guide():
    config = PPOConfig(gate_coef=0.4, guide_coef=0.5)
    assert gate_weight(config, 0.5) == pytest.approx(0.4)
    assert gate_weight(config, 0.125) == pytest.approx(0.1)
    assert gate_weight(config, 0.0) == 0.0
    assert gate_weight(PPOConfig(gate_coef=0.0), 0.5) == 0.0


def test_train_mara_takes_a_gate_coef_only_where_it_can_work(monkeypatch):
    assert _train_mara_config(monkeypatch, "--generalist").gate_coef == 0.5  # the default run's
    assert _train_mara_config(monkeypatch, "--generalist", "--gate-coef", "0").gate_coef == 0.0
    assert _train_mara_config(monkeypatch, "--generalist", "--gate-coef", "0.25").gate_coef == 0.25
    # without hints or a best teacher the gate has nothing to fit: the default is quietly off there
    assert _train_mara_config(monkeypatch, "--generalist", "--no-hints").gate_coef == 0.0
    assert _train_mara_config(monkeypatch, "--generalist", "--teacher", "srw").gate_coef == 0.0
    assert _train_mara_config(monkeypatch).gate_coef == 0.0
    with pytest.raises(SystemExit, match=r"--gate-floor must lie in \[0, the gate loss's weight 0.0\]"):
        _train_mara_config(monkeypatch, "--generalist", "--gate-coef", "0", "--gate-floor", "0.1")
    for argv in (
        ["--gate-coef", "0.5"],  # the single-scenario joint actor has no gate
        ["--generalist", "--no-hints", "--gate-coef", "0.5"],
        ["--generalist", "--teacher", "srw", "--gate-coef", "0.5"],
        ["--generalist", "--gate-coef", "-1"],
    ):
        with pytest.raises(SystemExit, match="--gate-coef must be >= 0 and needs --generalist"):
            _train_mara_config(monkeypatch, *argv)


def test_training_refuses_a_gate_coef_it_cannot_honour_before_any_work(tmp_path):
    from mara_agents.mara.ppo import train

    hinted = {"architecture": "slot", "planner_hints": True, "pick_hints": True, "gate_coef": 0.5}
    with pytest.raises(ValueError, match="needs a best teacher"):
        train(PPOConfig(**hinted, teacher="srw"), tmp_path / "srw", progress=False)
    with pytest.raises(ValueError, match="needs a slot actor with planner hints"):
        train(PPOConfig(gate_coef=0.5, teacher="best_shared"), tmp_path / "joint", progress=False)
    assert not (tmp_path / "srw").exists() and not (tmp_path / "joint").exists()


def _scaled_logits(net: SlotMARANet, factor: float, paths: tuple[str, ...] | None = None) -> torch.Tensor:
    observation = _demos(seeds=[0]).obs.batch(range(40, 120, 8))  # mid-episode turns: tasks in the table
    mask = torch.ones(10, ENV["max_tasks"] + 1)
    with torch.no_grad():
        return scale_paths(net, factor, paths).logits(observation, mask)


def _strong_paths(net: SlotMARANet) -> SlotMARANet:
    """``net`` with skip-path weights of O(5), as a trained generalist's picks have."""
    parameters = dict(net.named_parameters())
    with torch.no_grad():
        for names in PATH_PARAMETERS.values():
            for name in names:
                if name in parameters:
                    parameters[name].normal_(0.0, 5.0)
    return net


def test_scaled_paths_add_their_gated_terms_factor_times():
    net = _strong_paths(_net(uniform_pick=True))
    with torch.no_grad():
        net.gate.weight.normal_()  # a gate that mixes all three paths, slot by slot
    learned, once = _scaled_logits(net, 0.0), _scaled_logits(net, 1.0)
    finite = torch.isfinite(once)
    # logits are linear in the paths' weights: learned + 3 x (the paths' gated terms)
    expected = learned[finite] + 3.0 * (once[finite] - learned[finite])
    assert torch.allclose(_scaled_logits(net, 3.0)[finite], expected, atol=1e-4)
    assert not torch.allclose(once[finite], learned[finite], atol=1e-2)  # the paths mattered


def test_scaling_a_path_the_gate_does_not_weigh_changes_nothing():
    net = _strong_paths(pin_gate(_net(uniform_pick=True), "srw"))  # edf and uniform weigh 1e-13
    before = _scaled_logits(net, 1.0)
    assert torch.allclose(_scaled_logits(net, 5.0, ("edf", "uniform")), before, atol=1e-6)
    assert not torch.allclose(_scaled_logits(net, 5.0, ("srw",)), before, atol=1e-3)


def test_scale_paths_refuses_bad_arguments_and_leaves_the_network_alone():
    net = _net()
    before = {name: value.clone() for name, value in net.state_dict().items()}
    scale_paths(net, 2.0)
    assert all(torch.equal(before[name], value) for name, value in net.state_dict().items())
    with pytest.raises(ValueError, match="one or more of"):
        scale_paths(net, 2.0, ("uniform",))  # no uniform pick on this network
    with pytest.raises(ValueError, match="one or more of"):
        scale_paths(net, 2.0, ())
    for factor in (-1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="finite number >= 0"):
            scale_paths(net, factor)
    torch.manual_seed(0)
    with pytest.raises(ValueError, match="planner hints"):
        scale_paths(SlotMARANet(width=16, layers=1, heads=2), 2.0)


SCALE_SCRIPT = ROOT / "examples" / "scale_paths.py"
WEIGHTS = ROOT / "mara_agents" / "mara" / "weights"


def test_scale_paths_script_writes_a_loadable_scaled_copy(tmp_path):
    out = tmp_path / "scaled.pt"
    command = [sys.executable, str(SCALE_SCRIPT), "--checkpoint", str(WEIGHTS / "mara_generalist.pt")]
    done = run_script([*command, "--factor", "2", "--paths", "edf", "--out", str(out)])
    assert done.returncode == 0, done.stderr
    original, scaled = load_checkpoint(WEIGHTS / "mara_generalist.pt")[0], load_checkpoint(out)
    assert torch.equal(scaled[0].edf_skip.weight, 2 * original.edf_skip.weight)
    assert torch.equal(scaled[0].row_skip.weight, original.row_skip.weight)  # srw's path untouched
    assert scaled[2]["scaled_paths"]["factor"] == 2.0


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        (["--checkpoint", str(WEIGHTS / "mara.pt"), "--factor", "2"], "slot actor with planner hints"),
        (["--checkpoint", str(WEIGHTS / "mara_generalist.pt"), "--factor", "-2"], "finite number >= 0"),
        (["--checkpoint", str(WEIGHTS / "mara_generalist.pt"), "--factor", "2", "--paths", "lara"], "invalid choice"),
    ],
)
def test_scale_paths_script_refuses_bad_arguments(tmp_path, arguments, named):
    done = run_script([sys.executable, str(SCALE_SCRIPT), *arguments, "--out", str(tmp_path / "x.pt")])
    assert done.returncode == 2 and named in done.stderr
    assert not (tmp_path / "x.pt").exists()
