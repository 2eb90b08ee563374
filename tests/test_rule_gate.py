"""A slot actor whose gate a rule sets each slot: ``rule_gate``."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import mara_env
from mara_agents.mara.checkpoint import save_checkpoint
from mara_agents.mara.rule_gate import PINNED_GATE, RuleGatedScheduler, load_switch_path
from mara_agents.mara.slot_network import SlotMARANet
from mara_agents.mara.teacher_rules import LoadSwitchScheduler
from mara_env.env import live_turns

ENV = {"num_nodes": 6, "max_tasks": 6, "forecaster": "wls", "horizon": 80}
# splits these small episodes between srw and edf_uniform (the default is for big tabular ones), and
# lies off the rates they hit exactly: the rule reads the float32 vector, load_switch the decoded dict
RATE = 0.0613


def _load_switch_turns(seed: int, load: str):
    """(observation, action, path) at every turn of an episode load_switch plays (path ``None`` where no row
    is allowed: the scheduler then idles without asking its rule)."""
    env = mara_env.raw_env(**ENV, load=load)
    env.reset(seed=seed)
    rule = LoadSwitchScheduler(rate=RATE)
    rule.reset(seed)
    for agent in live_turns(env):
        observation = env.observe(agent)
        action = rule.act(observation, agent)
        yield observation, action, rule.last_path if observation["action_mask"][1:].any() else None
        env.step(action)


def _paths_only(tmp_path) -> RuleGatedScheduler:
    """A hinted slot actor with its learned scores off, so that only the gated skip paths decide."""
    torch.manual_seed(0)
    net = SlotMARANet(width=16, layers=1, heads=2, planner_hints=True, pick_hints=True, uniform_pick=True).eval()
    with torch.no_grad():
        net.row_score.weight.zero_()
        net.idle_score.weight.zero_()
    return RuleGatedScheduler(save_checkpoint(net, tmp_path / "net.pt", ENV), rate=RATE)


@pytest.mark.parametrize(("seed", "load"), [(3, "heavy"), (3, "extreme")])
def test_the_rule_names_load_switchs_path_and_the_pinned_paths_replay_it(tmp_path, seed, load):
    player = _paths_only(tmp_path)
    player.reset(seed)
    seen = set()
    for observation, action, path in _load_switch_turns(seed, load):
        assert player.act(observation, "node_0") == action
        if path is not None:
            assert load_switch_path(observation["observation"], LoadSwitchScheduler(rate=RATE)) == path
            assert (player.slot_parts.gate, player.slot_parts.uniform_gate) == PINNED_GATE[path]
            seen.add(path)
    assert seen == {"srw", "edf", "uniform"}  # every rule was played and replayed


def test_networks_without_the_three_paths_and_bad_rates_are_refused(tmp_path):
    plain = save_checkpoint(SlotMARANet(width=16, layers=1, heads=2), tmp_path / "plain.pt", ENV)
    with pytest.raises(ValueError, match="only of a slot actor with planner hints and the uniform path"):
        RuleGatedScheduler(plain)
    for rate in (0.0, -1.0, float("nan")):
        with pytest.raises(ValueError, match="rate must be a finite number"):
            RuleGatedScheduler(plain, rate=rate)


def test_the_shipped_generalist_loads_as_a_bench_agent():
    from mara_agents.registry import load_agent

    player = load_agent("mara_agents.mara.rule_gate:rule_gated_generalist")
    assert isinstance(player, RuleGatedScheduler) and player.requirements.forecaster == "flow_fixed"
    assert np.isfinite(player.net.gate.weight.detach().numpy()).all()
