"""ScenarioFocus: a share of the generalist's training episodes from one corner of the scenario space."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from mara_agents.mara.scenarios import ScenarioFocus, ScenarioSampler
from tests.test_mara_policy import _train_mara_config

RL_OVERLOAD = ScenarioFocus("rl", 24, (2.1, 3.5), 1.0)


def _in_corner(settings: dict) -> bool:
    return settings["workload"] == "rl" and settings["num_nodes"] >= 24 and 2.1 <= settings["load"] <= 3.5


def test_a_full_share_draws_only_the_corner_and_the_rest_as_usual():
    sampler = ScenarioSampler(max_tasks_cap=128, focus=RL_OVERLOAD)
    drawn = [sampler.sample(np.random.default_rng([seed, 1])) for seed in range(200)]
    assert all(_in_corner(settings) for settings in drawn)
    assert all(8 <= s["max_tasks"] <= 128 for s in drawn)
    assert {s["arrivals"] for s in drawn} == {"poisson", "bursty", "diurnal"}  # still drawn for every episode
    assert drawn[0] == sampler.sample(np.random.default_rng([0, 1]))  # seeded


def test_a_share_draws_about_that_share_from_the_corner():
    plain = ScenarioSampler(max_tasks_cap=128)
    focused = ScenarioSampler(max_tasks_cap=128, focus=ScenarioFocus("rl", 24, (2.1, 3.5), 0.15))
    rngs = [np.random.default_rng([seed, 2]) for seed in range(3000)]
    base = np.mean([_in_corner(plain.sample(np.random.default_rng([seed, 2]))) for seed in range(3000)])
    share = np.mean([_in_corner(focused.sample(rng)) for rng in rngs])
    assert base < 0.03  # rare without the focus: 1 workload in 11, big clusters, the upper loads
    assert 0.15 + 0.85 * base - 0.025 < share < 0.15 + 0.85 * base + 0.025  # binomial sd is about 0.007


@pytest.mark.parametrize(
    "focus, message",
    [
        (dict(workload="nope", min_nodes=24, loads=(2.0, 3.0), share=0.1), "focus workload 'nope' is not registered"),
        (dict(workload="rl", min_nodes=24, loads=(3.0, 2.0), share=0.1), "focus loads must be a range"),
        (dict(workload="rl", min_nodes=24, loads=(2.0, 3.0), share=0.0), r"focus share must be in \(0, 1\]"),
    ],
)
def test_bad_focus_is_refused_with_what_is_allowed(focus, message):
    with pytest.raises(ValueError, match=message):
        ScenarioFocus(**focus)


def test_focus_on_clusters_the_sampler_never_draws_is_refused():
    with pytest.raises(ValueError, match=r"focus min_nodes must be within nodes \(2, 64\), got 100"):
        ScenarioSampler(max_tasks_cap=128, focus=ScenarioFocus("rl", 100, (2.0, 3.0), 0.1))


def test_train_mara_focus_sets_the_sampler_and_refuses_without_the_generalist(monkeypatch):
    config = _train_mara_config(monkeypatch, "--generalist", "--focus", "rl", "24", "2.1", "3.5", "0.15")
    assert config.scenarios.focus == ScenarioFocus("rl", 24, (2.1, 3.5), 0.15)
    assert _train_mara_config(monkeypatch, "--generalist").scenarios.focus == ScenarioFocus("rl", 24, (0.7, 3.5), 0.3)
    assert _train_mara_config(monkeypatch, "--generalist", "--no-focus").scenarios.focus is None
    assert _train_mara_config(monkeypatch, "--generalist", "--quick").scenarios.focus is None  # 2-6 nodes there
    with pytest.raises(SystemExit, match="--focus and --no-focus contradict each other"):
        _train_mara_config(monkeypatch, "--generalist", "--no-focus", "--focus", "rl", "24", "2.1", "3.5", "0.15")
    with pytest.raises(SystemExit, match="--focus draws a share of the generalist's scenarios: it needs"):
        _train_mara_config(monkeypatch, "--focus", "rl", "24", "2.1", "3.5", "0.15")
    with pytest.raises(SystemExit, match="--no-focus turns off the generalist's focus: it needs --generalist"):
        _train_mara_config(monkeypatch, "--no-focus")
    with pytest.raises(SystemExit, match="--focus rl 24 2.1 3.5 half: could not convert"):
        _train_mara_config(monkeypatch, "--generalist", "--focus", "rl", "24", "2.1", "3.5", "half")
    with pytest.raises(SystemExit, match=r"--focus rl 24 2.1 3.5 0.15: focus min_nodes must be within nodes \(2, 6\)"):
        _train_mara_config(monkeypatch, "--generalist", "--quick", "--focus", "rl", "24", "2.1", "3.5", "0.15")


def test_without_a_focus_the_draws_are_those_from_before_it_existed():
    # The default --generalist run reproduces the shipped checkpoint only if its scenarios are unchanged:
    # these are the first three draws of the sampler as it was before ScenarioFocus (commit b1622b3).
    sampler = ScenarioSampler(max_tasks_cap=128, warmup=True)
    drawn = [sampler.sample(np.random.default_rng([seed, 0x5CE7])) for seed in range(3)]
    got = [(s["num_nodes"], s["max_tasks"], s["workload"], round(s["load"], 4)) for s in drawn]
    assert got == [(18, 53, "mixed", 2.3471), (14, 28, "wordlm", 3.173), (8, 9, "tabular", 3.0815)]


TABULAR_BIG = ScenarioFocus("tabular", 24, (0.7, 3.5), 0.15)
RL_DEFAULT = ScenarioFocus("rl", 24, (0.7, 3.5), 0.3)  # the default --generalist run's focus


def _in(focus: ScenarioFocus, settings: dict) -> bool:
    low, high = focus.loads
    big_enough = settings["num_nodes"] >= focus.min_nodes
    return settings["workload"] == focus.workload and big_enough and low <= settings["load"] <= high


def test_more_foci_each_draw_their_share_and_leave_the_first_focus_as_it_was():
    one = ScenarioSampler(max_tasks_cap=128, focus=RL_DEFAULT)
    two = ScenarioSampler(max_tasks_cap=128, focus=one.focus, more_foci=(TABULAR_BIG,))
    seeds = range(3000)
    first = [one.sample(np.random.default_rng([seed, 3])) for seed in seeds]
    both = [two.sample(np.random.default_rng([seed, 3])) for seed in seeds]
    # one uniform draw picks the focus, the first one first: its episodes are the very same
    picked = [one.draw_focus(np.random.default_rng([seed, 3])) is not None for seed in seeds]
    assert [two.draw_focus(np.random.default_rng([seed, 3])) == one.focus for seed in seeds] == picked
    assert [s for s, p in zip(first, picked) if p] == [s for s, p in zip(both, picked) if p]
    assert 0.3 - 0.03 < np.mean(picked) < 0.3 + 0.03
    share = np.mean([_in(TABULAR_BIG, s) for s in both])
    base = np.mean([_in(TABULAR_BIG, s) for s in first])
    assert base < 0.03
    assert 0.15 - 0.025 < share - base < 0.15 + 0.025  # binomial sd is about 0.007


def test_more_foci_round_trip_through_a_record_and_refuse_shares_over_one():
    sampler = ScenarioSampler(max_tasks_cap=128, focus=RL_DEFAULT, more_foci=(TABULAR_BIG,))
    record = json.loads(json.dumps(dataclasses.asdict(sampler)))  # as a checkpoint's config holds it
    assert ScenarioSampler.from_record(record) == sampler
    old = {key: value for key, value in record.items() if key != "more_foci"}  # a record from before the field
    assert ScenarioSampler.from_record(old).more_foci == ()
    with pytest.raises(ValueError, match=r"the foci's shares add up to more than 1: \[1.0, 0.15\]"):
        ScenarioSampler(max_tasks_cap=128, focus=RL_OVERLOAD, more_foci=(TABULAR_BIG,))
    with pytest.raises(ValueError, match=r"focus min_nodes must be within nodes \(2, 64\), got 100"):
        ScenarioSampler(max_tasks_cap=128, more_foci=(ScenarioFocus("rl", 100, (2.0, 3.0), 0.1),))


def test_train_mara_also_focus_adds_a_focus_beside_the_default_one(monkeypatch):
    config = _train_mara_config(monkeypatch, "--generalist", "--also-focus", "tabular", "24", "0.7", "3.5", "0.15")
    assert config.scenarios.focus == RL_DEFAULT
    assert config.scenarios.more_foci == (TABULAR_BIG,)
    assert _train_mara_config(monkeypatch, "--generalist").scenarios.more_foci == ()
    with pytest.raises(SystemExit, match="--also-focus draws a share of the generalist's scenarios: it needs"):
        _train_mara_config(monkeypatch, "--also-focus", "tabular", "24", "0.7", "3.5", "0.15")
    with pytest.raises(SystemExit, match="--also-focus: the foci's shares add up to more than 1"):
        _train_mara_config(monkeypatch, "--generalist", "--also-focus", "tabular", "24", "0.7", "3.5", "0.8")
    with pytest.raises(SystemExit, match="--also-focus tabular 24 0.7 3.5 lots: could not convert"):
        _train_mara_config(monkeypatch, "--generalist", "--also-focus", "tabular", "24", "0.7", "3.5", "lots")
