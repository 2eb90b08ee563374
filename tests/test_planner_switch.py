"""benchmarks/planner_switch.py: its demand density, its switching rules and the script end to end."""

from __future__ import annotations

import json
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest

from tests.scripts import ROOT, load_script, run_script

switch = load_script("benchmarks/planner_switch.py")


def slot(time: float, live: float, queued: float = 0.0) -> SimpleNamespace:
    """What the rules read of an observation: the globals (time, table and queue over K_max) of a 16-row table."""
    globals_ = {"time": time, "live_tasks": live, "queued_tasks": queued}
    return SimpleNamespace(globals=globals_, layout=SimpleNamespace(max_tasks=16))


def test_demand_density_is_the_largest_work_due_by_a_deadline_over_the_nodes_slots():
    # rows 0-2 count; row 3 is empty and row 4 has no forecast yet, so their work is ignored
    obs = SimpleNamespace(
        present=np.array([True, True, True, False, True]),
        forecast_valid=np.array([True, True, True, True, False]),
        slots_left=np.array([10.0, 4.0, 20.0, 1.0, 1.0]),
        up_nodes=2,
        remaining=lambda name: np.array([8.0, 6.0, 30.0, 999.0, 999.0]),
    )
    # by deadline: 6 due in 4 slots (6/8), 14 in 10 (14/20), 44 in 20 (44/40 = 1.1)
    assert switch.demand_density(obs) == pytest.approx(1.1)
    obs.present[:] = False
    assert switch.demand_density(obs) == 0.0


def test_a_fill_rule_follows_the_crowd_of_each_slot():
    rule = switch.PlannerSwitch("fill", 0.5)
    assert rule.planner(slot(0.0, 0.5)) == "srw"
    assert rule.planner(slot(0.01, 0.5, 0.25)) == "edf_uniform"
    assert rule.planner(slot(0.02, 0.25)) == "srw"


def test_an_early_rule_decides_once_on_the_mean_crowd_of_the_first_slots():
    calm, busy = switch.PlannerSwitch("early", 0.3), switch.PlannerSwitch("early", 0.3)
    for t in range(switch.JUDGED_FROM - 1):
        assert calm.planner(slot(t, 0.2)) == busy.planner(slot(t, 0.5)) == "edf_uniform"
    assert calm.planner(slot(99, 0.2)) == "srw" and busy.planner(slot(99, 0.5)) == "edf_uniform"
    assert calm.planner(slot(100, 3.0)) == "srw"  # for good: a later crowd changes nothing
    assert busy.planner(slot(101, 0.0)) == "edf_uniform"


def test_a_late_rule_leaves_srw_for_good_once_the_mean_crowd_passes_its_limit():
    rule = switch.PlannerSwitch("late", 1.0)
    for t in range(switch.JUDGED_FROM - 1):
        assert rule.planner(slot(t, 2.0)) == "srw"  # judged only from the 20th slot on
    assert rule.planner(slot(99, 2.0)) == "edf_uniform"
    assert rule.planner(slot(100, 0.0)) == "edf_uniform"


def test_an_after_rule_plays_edf_uniform_first_then_follows_the_crowd():
    rule = switch.PlannerSwitch("after", 1.0)
    assert all(rule.planner(slot(t, 0.1)) == "edf_uniform" for t in range(switch.JUDGED_FROM))
    assert rule.planner(slot(50, 0.1)) == "srw"
    assert rule.planner(slot(51, 1.5)) == "edf_uniform"


@pytest.mark.parametrize("text", ["fill", "fill 0", "fill -1", "fill nan", "speed 1", "late x"])
def test_a_bad_rule_names_the_kinds_allowed(text):
    with pytest.raises(ValueError, match="KIND one of"):
        switch.parse_rule(text)


def test_the_script_writes_every_episode_and_refuses_a_bad_rule(tmp_path):
    script = [sys.executable, "benchmarks/planner_switch.py", "--sizes", "4", "--loads", "heavy", "--seeds", "2"]
    rules = ["--rules", "fill 0.5", "early 0.3"]
    small = [*script, "--horizon", "30", "--jobs", "1", *rules, "--out", str(tmp_path / "s")]
    done = run_script(small, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    records = json.loads((tmp_path / "s.json").read_text())
    assert len(records) == 4 * 2  # srw, edf_uniform and two rules, two seeds each
    assert {r["srw_turns"] for r in records if r["agent"] == "srw"} == {1.0}
    report = (tmp_path / "s.md").read_text()
    assert "| tabular | heavy | 4 |" in report and "significantly below the better planner" in report
    again = [*script, *rules, "--replay", str(tmp_path / "s.json"), "--out", str(tmp_path / "again")]
    assert subprocess.run(again, capture_output=True, cwd=ROOT).returncode == 0
    assert (tmp_path / "again.md").read_text().split("\n\n")[1:] == report.split("\n\n")[1:]  # the tables
    lacking = run_script([*again[:-4], "fill 0.9", *again[-4:]], cwd=ROOT)
    assert lacking.returncode == 2 and "no record of ('fill 0.9'" in lacking.stderr
    refused = run_script([*script, "--rules", "fill 0"], cwd=ROOT)
    assert refused.returncode == 2 and "--rules: a rule is 'KIND LIMIT'" in refused.stderr
