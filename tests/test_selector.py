"""The selector: per slot, a generalist's learned gate or one planner's path alone, fitted after training."""

from __future__ import annotations

import sys

import numpy as np
import pytest
import torch

from mara_agents.heuristics import UniformScheduler
from mara_agents.mara.checkpoint import load_checkpoint, save_checkpoint
from mara_agents.mara.context_features import SLOT_CONTEXT_INDEX
from mara_agents.mara.gate_edits import add_selector, graft_uniform_path
from mara_agents.mara.gate_paths import SELECTOR_OPTIONS, select_paths, selector_inputs
from mara_agents.mara.numpy_actor import NumpySlotEncoder, NumpyTurnHead, slot_selector_inputs
from mara_agents.mara.scenarios import ScenarioSampler
from mara_agents.mara.selector import (
    OptionPlays,
    choice_loss,
    choice_report,
    cross_validate,
    fit_selector,
    option_network,
    play_options,
)
from mara_agents.mara.slot_network import NUM_NODES, SlotMARANet
from mara_env.observation import layout_of
from tests.scripts import ROOT, run_script
from tests.test_planner_hints import _srw_turns

# named workloads: with None the sampler draws from the registry, which other tests may extend
TINY = ScenarioSampler(
    nodes=(2, 4), max_tasks_cap=8, horizon=(20, 20), workloads=("synthetic", "mixed"), fixed={"curve_split": "train"}
)


def _net(uniform: bool = False) -> SlotMARANet:
    torch.manual_seed(0)
    net = SlotMARANet(width=16, layers=1, heads=2, planner_hints=True, pick_hints=True, uniform_pick=uniform)
    with torch.no_grad():
        net.gate.weight.normal_()  # a gate that reads the slot, as a trained one does
    return net.eval()


def _turns(count: int = 12):
    return [(o["observation"], o["action_mask"].astype(np.float32)) for o, _ in list(_srw_turns(slots=12))[:count]]


def _torch_logits(net: SlotMARANet, vector: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    with torch.no_grad():
        logits, weights = net.logits_and_paths(torch.as_tensor(vector)[None], torch.as_tensor(mask)[None])
    return logits[0].numpy(), weights[0].numpy()


@pytest.mark.parametrize("uniform", [False, True])
def test_an_added_selector_plays_as_the_network_did(uniform):
    net = _net(uniform)
    chosen = add_selector(net)
    assert chosen.config["selector"] and chosen.config["uniform_pick"] and not net.config.get("selector", False)
    encoder, head = NumpySlotEncoder(chosen), NumpyTurnHead(chosen)
    for vector, mask in _turns():
        expected, weights = _torch_logits(net, vector, mask)
        got, got_weights = _torch_logits(chosen, vector, mask)
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(got_weights, weights, atol=1e-6)
        np.testing.assert_allclose(head.logits(encoder(vector), vector, mask), expected, rtol=1e-4, atol=1e-4)


def test_a_grafted_uniform_path_pinned_plays_uniform():
    grafted = option_network(add_selector(_net()), "uniform")
    encoder, head = NumpySlotEncoder(grafted), NumpyTurnHead(grafted)
    for observation, action in _srw_turns(slots=20, scheduler=UniformScheduler()):
        vector, mask = observation["observation"], observation["action_mask"].astype(np.float32)
        assert int(np.argmax(head.logits(encoder(vector), vector, mask))) == action
    with pytest.raises(ValueError, match="no uniform path yet"):
        graft_uniform_path(_net(uniform=True))


def test_numpy_and_torch_selectors_agree():
    chosen = add_selector(_net())
    with torch.no_grad():
        for parameter in chosen.selector.parameters():
            parameter.normal_()  # a selector that mixes every option
    encoder, head = NumpySlotEncoder(chosen), NumpyTurnHead(chosen)
    for vector, mask in _turns():
        expected, weights = _torch_logits(chosen, vector, mask)
        parts = encoder(vector)
        np.testing.assert_allclose(head.logits(parts, vector, mask), expected, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(
            [parts.gate, 1 - parts.gate - parts.uniform_gate, parts.uniform_gate], weights, atol=1e-5
        )
        batch = torch.as_tensor(vector)[None]
        with torch.no_grad():
            pooled = chosen.encode(batch).pooled
        context = layout_of(vector).split_observation(vector)[1][SLOT_CONTEXT_INDEX]
        inputs = selector_inputs(pooled, torch.as_tensor(context)[None], batch[:, NUM_NODES])[0].numpy()
        np.testing.assert_allclose(slot_selector_inputs(pooled[0].numpy(), vector), inputs, atol=1e-6)


def test_select_paths_mixes_the_learned_gate_with_each_path_alone():
    choice = torch.tensor([[0.5, 0.2, 0.1, 0.2]])  # learned, srw, edf, uniform
    srw, uniform = select_paths(choice, torch.tensor([[0.6]]), torch.tensor([[0.3]]))
    assert srw.item() == pytest.approx(0.5 * 0.6 + 0.2) and uniform.item() == pytest.approx(0.5 * 0.3 + 0.2)
    # the edf path's weight is the rest: 0.5 * (1 - 0.6 - 0.3) + 0.1
    assert 1 - srw.item() - uniform.item() == pytest.approx(0.15)


def test_choice_loss_by_hand():
    outcomes = np.array([[0.5, 0.7, 0.3, 0.5], [0.2, 0.2, 0.2, 0.2]])  # the second scenario teaches nothing
    plays = OptionPlays(outcomes, np.zeros((3, 2), np.float32), np.array([0, 0, 1]), [{}, {}])
    logits = torch.tensor([[0.0, float(np.log(3.0)), 0.0, 0.0], [0.0, 0.0, 0.0, 0.0], [5.0, -2.0, 1.0, 0.0]])
    # scenario 0 (best: srw, spread 0.4) has p_srw = 3/6 and 1/4 at its two slots, each weighing 0.2
    expected = -(0.2 * np.log(0.5) + 0.2 * np.log(0.25)) / 0.4
    assert choice_loss(logits, plays).item() == pytest.approx(expected)
    tied = OptionPlays(outcomes[1:], np.zeros((1, 2), np.float32), np.array([0]), [{}])
    assert choice_loss(logits[2:].requires_grad_(), tied).item() == 0.0


def _separable_plays(per_group: int = 6) -> OptionPlays:
    """Scenarios of two kinds told apart by one input: srw wins the first kind, edf the second."""
    rng = np.random.default_rng(0)
    width = 16 + len(SLOT_CONTEXT_INDEX) + 1
    outcomes, features, scenario = [], [], []
    for index in range(2 * per_group):
        kind = index % 2
        outcomes.append([0.5, 0.6, 0.4, 0.3] if kind == 0 else [0.5, 0.4, 0.7, 0.3])
        slots = rng.normal(0.0, 0.3, size=(10, width)).astype(np.float32)
        slots[:, 0] += 1.0 if kind == 0 else -1.0
        features.append(slots)
        scenario.append(np.full(10, index))
    return OptionPlays(np.array(outcomes), np.concatenate(features), np.concatenate(scenario), [{}] * 2 * per_group)


def test_the_fit_learns_which_option_wins_where_and_changes_nothing_else():
    net = _net()
    plays = _separable_plays()
    fitted = fit_selector(net, plays.subset(np.arange(8)), steps=300, weight_decay=0.0)
    held_out = choice_report(fitted, plays.subset(np.arange(8, 12)))
    assert held_out["selector"] > 0.64  # the per-scenario best is 0.65; learned alone 0.5, srw alone 0.5
    assert held_out["chose srw"] > 0.45 and held_out["chose edf"] > 0.45
    folds = cross_validate(net, plays, folds=3, steps=300, weight_decay=0.0)
    assert len(folds) == 3 and all(report["selector"] > 0.63 for report in folds)
    with pytest.raises(ValueError, match="folds"):
        cross_validate(net, plays, folds=13)
    before = add_selector(net).state_dict()
    for name, value in fitted.state_dict().items():
        assert name.startswith("selector.") or torch.equal(value, before[name])


def test_option_networks_and_their_refusals():
    chosen = add_selector(_net())
    learned = option_network(chosen, "learned")
    assert learned.selector is None and not learned.config["selector"] and chosen.selector is not None
    for vector, mask in _turns(3):
        _, weights = _torch_logits(option_network(chosen, "edf"), vector, mask)
        np.testing.assert_allclose(weights, [0.0, 1.0, 0.0], atol=1e-9)
    with pytest.raises(ValueError, match="one of"):
        option_network(chosen, "oracle")
    with pytest.raises(ValueError, match="already"):
        add_selector(chosen)
    with pytest.raises(ValueError, match="uniform_pick"):
        SlotMARANet(width=16, layers=1, heads=2, planner_hints=True, pick_hints=True, selector=True)


def test_a_selector_checkpoint_round_trips(tmp_path):
    chosen = add_selector(_net())
    path = save_checkpoint(chosen, tmp_path / "selector.pt", {"num_nodes": 6})
    loaded, env, _ = load_checkpoint(path)
    assert loaded.config == chosen.config and env == {"num_nodes": 6}
    for vector, mask in _turns(3):
        np.testing.assert_allclose(_torch_logits(loaded, vector, mask)[0], _torch_logits(chosen, vector, mask)[0])


@pytest.fixture(scope="module")
def tiny_checkpoint(tmp_path_factory):
    path = tmp_path_factory.mktemp("selector") / "net.pt"
    env = {"num_nodes": 4, "max_tasks": 8, "forecaster": "wls", "curve_split": "train"}
    return save_checkpoint(_net(), path, env)


def test_plays_are_the_same_in_one_process_or_two(tiny_checkpoint):
    one = play_options(tiny_checkpoint, 3, TINY, jobs=1, progress=False)
    two = play_options(tiny_checkpoint, 3, TINY, jobs=2, progress=False)
    assert one.outcomes.shape == (3, len(SELECTOR_OPTIONS)) and 0 < len(one.features) == len(one.scenario)
    np.testing.assert_array_equal(one.outcomes, two.outcomes)
    np.testing.assert_array_equal(one.features, two.features)
    assert one.settings == two.settings and all(2 <= s["num_nodes"] <= 4 for s in one.settings)
    with pytest.raises(ValueError, match="scenarios"):
        play_options(tiny_checkpoint, 0, TINY)


SCRIPT = ROOT / "examples" / "fit_selector.py"


def test_cli_refits_saved_plays_and_refuses_what_it_cannot_read(tmp_path, tiny_checkpoint):
    saved = tmp_path / "plays.npz"
    _separable_plays().save(saved)
    assert OptionPlays.load(saved).settings == [{}] * 12
    np.savez(tmp_path / "foreign.npz", outcomes=np.zeros(2))
    with pytest.raises(ValueError, match="missing"):
        OptionPlays.load(tmp_path / "foreign.npz")
    (tmp_path / "corrupt.npz").write_bytes(saved.read_bytes()[:100])  # a file cut short
    with pytest.raises(ValueError, match="corrupt.npz: not a readable file"):
        OptionPlays.load(tmp_path / "corrupt.npz")
    (tmp_path / "garbage.npz").write_bytes(b"garbage")  # not even a zip
    with pytest.raises(ValueError, match="garbage.npz: not a readable file"):
        OptionPlays.load(tmp_path / "garbage.npz")
    out = tmp_path / "fit"
    command = [sys.executable, str(SCRIPT), "--checkpoint", str(tiny_checkpoint), "--plays", str(saved)]
    done = run_script([*command, "--steps", "20", "--folds", "3", "--out", str(out)])
    assert done.returncode == 0, done.stderr
    assert load_checkpoint(out / "checkpoint.pt")[0].config["selector"]
    report = (out / "report.md").read_text()
    assert "| held-out fold 2 |" in report and "Held-out gain of the selector" in report
    refused = run_script([*command, "--folds", "1", "--out", str(out)])
    assert refused.returncode == 2 and "--folds" in refused.stderr
