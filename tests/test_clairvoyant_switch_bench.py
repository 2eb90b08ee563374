"""benchmarks/clairvoyant_switch.py: the copies leave the episode alone, the choice by hand, the report,
a small run end to end, refusals."""

import json
import sys

import numpy as np
import pytest

import mara_env
from mara_agents import load_agent
from mara_agents.evaluation import evaluate
from tests.scripts import ROOT, load_script, run_script

bench = load_script("benchmarks/clairvoyant_switch.py")
CELL = ("vision", "heavy", 4)


class Idle:
    """Never trains (a candidate that completes nothing)."""

    requirements = load_agent("edf").requirements

    def reset(self, seed=None):
        pass

    def act(self, observation, agent):
        return 0


def _env(horizon=60):
    return mara_env.raw_env(num_nodes=4, max_tasks=16, horizon=horizon, workload="vision", load="heavy",
                            curve_split="val")  # fmt: skip


def test_one_candidate_plays_its_own_episode_despite_the_copies():
    record = bench.switch_episode((("srw",), CELL, 10_000_001, 5, 0, 80, None))
    alone = evaluate("srw", [10_000_001], **bench.validation_env(CELL, None, 80))[0]
    assert record == {"completion_rate": alone["completion_rate"], "shares": {"srw": 1.0}}


def test_a_choice_leaves_the_env_and_the_schedulers_as_they_were():
    env, schedulers = _env(), {"srw": load_agent("srw"), "edf": load_agent("edf")}
    env.reset(seed=3)
    for scheduler in schedulers.values():
        scheduler.reset(3)
    bench.play_slots(env, schedulers["srw"], 10)
    state, metrics, agent = env.state().copy(), env.metrics(), env.agent_selection
    rng = schedulers["srw"].rng.bit_generator.state
    bench.clairvoyant_choice(env, schedulers, 0, "srw")
    np.testing.assert_array_equal(env.state(), state)
    assert env.metrics() == metrics and env.agent_selection == agent
    assert schedulers["srw"].rng.bit_generator.state == rng


def test_the_choice_goes_to_the_candidate_that_nets_more_and_ties_keep_the_player():
    env = _env()
    env.reset(seed=1)
    edf, idle = load_agent("edf"), Idle()
    edf.reset(1)
    nets = {}
    for name, player in (("edf", load_agent("edf")), ("idle", Idle())):
        future = _env()
        future.reset(seed=1)
        bench.play_slots(future, player, 60)
        metrics = future.metrics()
        nets[name] = metrics["completed"] - metrics["expired"]
    assert nets["edf"] > nets["idle"]  # edf completes tasks here; idling only lets them expire
    assert bench.clairvoyant_choice(env, {"idle": idle, "edf": edf}, 0, "idle") == "edf"
    twin = load_agent("edf")
    assert bench.clairvoyant_choice(env, {"edf": edf, "twin": twin}, 0, "twin") == "twin"  # the same play: a tie
    assert bench.clairvoyant_choice(env, {"edf": edf, "twin": twin}, 5, "edf") == "edf"


def test_candidates_that_read_forecasts_share_their_env_and_others_join_it():
    env = bench.validation_env(CELL, None, 50)
    shared = bench.shared_env({"edf": load_agent("edf"), "srw": load_agent("srw")}, env)
    assert shared["forecaster"] != "none"
    assert bench.shared_env({"edf": load_agent("edf")}, env)["forecaster"] == "none"
    with pytest.raises(ValueError, match="'srw' and 'srw@wls' ask for different envs"):
        bench.shared_env({"srw": load_agent("srw"), "srw@wls": load_agent("srw@wls")}, env)


def test_report_gives_the_paired_gain_over_the_best_candidate_and_the_shares():
    rates = {"rl:train:8": {"srw": [0.5, 0.6], "edf": [0.6, 0.7], "switcher": [0.7, 0.9]}}
    shares = {"rl:train:8": {"srw": [0.25, 0.75], "edf": [0.75, 0.25]}}
    text = bench.report(rates, shares, ["srw", "edf"], [], ["rl:train:8"], "Settings.")
    # against edf (0.65): gains 10 and 20 points, mean 15, t(1) 95% half-width 12.706 * 5 = 63.5
    assert "| rl:train:8 | 0.550 | 0.650 | 0.800 | +15.0 ± 63.5 vs edf | srw 0.50, edf 0.50 |" in text
    assert "+15.0 points on average over 1 cells; significantly below in 0, above in 0" in text


def test_a_small_run_writes_rates_and_shares(tmp_path):
    out = tmp_path / "cs"
    result = run_script(
        [sys.executable, str(ROOT / "benchmarks/clairvoyant_switch.py"), "--out", str(out), "--cells", "rl:train:2",
         "--seeds", "2", "--horizon", "30", "--every", "10", "--candidates", "srw", "edf", "--also", "uniform",
         "--jobs", "1"],
        cwd=ROOT,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    summary = json.loads(out.with_suffix(".json").read_text())
    assert set(summary["rates"]["rl:train:2"]) == {"srw", "edf", "uniform", "switcher"}
    assert all(len(v) == 2 for v in summary["rates"]["rl:train:2"].values())
    assert all(np.isclose(sum(s[i] for s in summary["shares"]["rl:train:2"].values()), 1.0) for i in range(2))
    assert "| rl:train:2 |" in out.with_suffix(".md").read_text()


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--cells", "rl:train"], "WORKLOAD:LOAD:NODES"),
        (["--every", "0"], "--every must be >= 1"),
        (["--lookahead", "-1"], "--lookahead must be >= 0"),
        (["--candidates", "srw", "srw"], "--candidates must differ"),
        (["--candidates", "nosuch"], "nosuch"),
        (["--candidates", "srw", "srw@wls"], "ask for different envs"),
    ],
)
def test_bad_arguments_exit_2_naming_what_is_wrong(tmp_path, extra, message):
    result = run_script(
        [sys.executable, str(ROOT / "benchmarks/clairvoyant_switch.py"), "--out", str(tmp_path / "x"), *extra],
        cwd=ROOT,
    )  # fmt: skip
    assert result.returncode == 2 and message in result.stderr
