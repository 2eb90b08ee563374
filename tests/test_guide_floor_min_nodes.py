"""A guide floor held only on big clusters (``guide_floor_min_nodes``): which turns it holds on, the
weights it gives them, and the checks of the setting in the library and the CLI."""

from __future__ import annotations

import numpy as np
import pytest

from mara_agents.mara.guidance import (
    EPISODE_BEST,
    TeacherLead,
    check_floor_min_nodes,
    check_guide_settings,
    floor_held,
    guide_weights,
)
from mara_agents.mara.ppo import PPOConfig
from tests.test_mara_policy import _train_mara_config


def _config(**changes) -> PPOConfig:
    # coef 0.5 annealed to 0 by half of 10 iterations: 0.5, 0.4, 0.3, 0.2, 0.1, 0, ...; floor 0.25
    return PPOConfig(**{"guide_coef": 0.5, "guide_until": 0.5, "guide_floor": 0.25, "teacher": "best", **changes})


def test_the_floor_holds_on_clusters_of_at_least_the_given_nodes():
    config = _config(guide_floor_min_nodes=24)
    nodes = np.array([2, 8, 23, 24, 64])
    held = floor_held(config, None, np.zeros(5, dtype=int), nodes)
    assert held.tolist() == [False, False, False, True, True]
    np.testing.assert_allclose(guide_weights(config, 10, 10, held), [0, 0, 0, 0.25, 0.25])
    np.testing.assert_allclose(guide_weights(config, 3, 10, held), [0.3] * 5, atol=1e-6)  # annealed weight above
    assert floor_held(_config(), None, np.zeros(5, dtype=int), nodes) is None  # neither setting: held everywhere
    assert guide_weights(_config(), 10, 10, None) == 0.25


def test_with_the_teachers_lead_both_must_hold():
    config = _config(guide_floor_min_nodes=24, guide_where_trailing=EPISODE_BEST)
    lead = TeacherLead(EPISODE_BEST)
    lead.record(0, (0.9,), 0.5)  # kind 0: the teacher leads
    lead.record(1, (0.4,), 0.5)  # kind 1: the student leads
    kinds, nodes = np.array([0, 0, 1, 1]), np.array([8, 32, 8, 32])
    assert floor_held(config, lead, kinds, nodes).tolist() == [False, True, False, False]
    config.guide_floor_min_nodes = None
    assert floor_held(config, lead, kinds, nodes).tolist() == [True, True, False, False]


def test_the_setting_is_checked(monkeypatch):
    check_floor_min_nodes(_config())  # off: nothing to check
    check_floor_min_nodes(_config(guide_floor_min_nodes=1))
    for bad in (0, -4, 2.5, True, "24", float("nan")):
        with pytest.raises(ValueError, match=r"guide_floor_min_nodes must be a whole number of nodes >= 1"):
            check_guide_settings(_config(guide_floor_min_nodes=bad))
    with pytest.raises(ValueError, match=r"guide_floor_min_nodes needs guide_floor > 0 .*got 0.0"):
        check_guide_settings(_config(guide_floor=0.0, guide_floor_min_nodes=24))
    argv = ["--generalist", "--guide-floor", "0.25", "--guide-floor-min-nodes"]
    assert _train_mara_config(monkeypatch, *argv, "24").guide_floor_min_nodes == 24
    assert _train_mara_config(monkeypatch, "--generalist", "--guide-floor", "0.25").guide_floor_min_nodes is None
    with pytest.raises(SystemExit, match="--guide-floor-min-nodes: .*needs guide_floor > 0"):
        _train_mara_config(monkeypatch, "--generalist", "--guide-floor-min-nodes", "24")
    with pytest.raises(SystemExit, match="--guide-floor-min-nodes: .*whole number of nodes >= 1.*got 0"):
        _train_mara_config(monkeypatch, *argv, "0")
