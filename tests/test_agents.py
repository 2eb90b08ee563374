"""Schedulers, the evaluation runner, its statistics and the command line."""

import json

import numpy as np
import pytest

import mara_agents
from mara_agents.cli import main
from mara_agents.stats import significance, t_critical_95

RECORD_KEYS = {"seed", "completion_rate", "completed", "arrived", "wasted_work", "utilisation"}


def test_make_knows_the_heuristics_and_rejects_others():
    for name in ("random", "round_robin", "uniform", "edf"):
        assert isinstance(mara_agents.make(name), mara_agents.Scheduler)
    with pytest.raises(ValueError, match="scheduler must be one of"):
        mara_agents.make("fifo")


@pytest.mark.parametrize("name", ["random", "round_robin", "uniform", "edf"])
@pytest.mark.parametrize("num_nodes, max_tasks", [(1, 4), (8, 16), (16, 8)])
def test_every_heuristic_plays_valid_episodes(name, num_nodes, max_tasks):
    # The env raises on any masked action, so finishing the episode is the check.
    records = mara_agents.evaluate(name, [0, 1], num_nodes=num_nodes, max_tasks=max_tasks, horizon=60)
    assert len(records) == 2
    for r in records:
        assert r.keys() >= RECORD_KEYS
        assert r["completed"] + r["expired"] == r["arrived"]
        assert 0.0 <= r["completion_rate"] <= 1.0


def test_edf_beats_random_at_the_train_load():
    seeds = range(20)
    edf = mara_agents.summarize(mara_agents.evaluate("edf", seeds, load="train"))
    rnd = mara_agents.summarize(mara_agents.evaluate("random", seeds, load="train"))
    assert edf["completed"]["mean"] > rnd["completed"]["mean"]


def test_uniform_keeps_nodes_on_their_tasks():
    uniform = mara_agents.summarize(mara_agents.evaluate("uniform", range(3)))
    rr = mara_agents.summarize(mara_agents.evaluate("round_robin", range(3)))
    assert uniform["switches_per_task"]["mean"] < rr["switches_per_task"]["mean"]


def test_random_scheduler_is_seeded():
    a = mara_agents.evaluate("random", [5])[0]
    b = mara_agents.evaluate("random", [5])[0]
    assert a["completed"] == b["completed"] and a["wasted_work"] == b["wasted_work"]


def test_summarize_hand_computed():
    records = [{"seed": i, "completion_rate": v} for i, v in enumerate([0.1, 0.2, 0.3])]
    s = mara_agents.summarize(records)["completion_rate"]
    assert s["mean"] == pytest.approx(0.2)
    assert s["ci95"] == pytest.approx(4.303 * 0.1 / np.sqrt(3))
    assert s["n"] == 3
    assert "seed" not in mara_agents.summarize(records)


def test_t_critical_values():
    assert t_critical_95(1) == 12.706
    assert t_critical_95(30) == 2.042
    assert t_critical_95(60) == pytest.approx(2.000, abs=2e-3)
    assert t_critical_95(10_000) == pytest.approx(1.960, abs=1e-3)


def test_summarize_needs_records():
    with pytest.raises(ValueError, match="at least one"):
        mara_agents.summarize([])


def test_cli_compare_prints_a_table_and_writes_json(tmp_path, capsys):
    out = tmp_path / "records.json"
    code = main(
        ["compare", "--agents", "edf", "random", "--seeds", "2", "--horizon", "60", "--quiet", "--json", str(out)]
    )
    assert code == 0
    text = capsys.readouterr().out
    assert "| edf |" in text and "| random |" in text and "completion_rate" in text
    data = json.loads(out.read_text())
    assert data["seeds"] == [0, 1] and len(data["records"]["edf"]) == 2


def test_cli_bad_config_is_one_clear_line(capsys):
    with pytest.raises(SystemExit) as done:  # argparse's own exit, before any work
        main(["compare", "--num-nodes", "0", "--seeds", "1", "--quiet"])
    assert done.value.code == 2
    assert "--num-nodes" in capsys.readouterr().err


def test_cli_describe(capsys):
    assert main(["describe"]) == 0
    assert "synthetic" in capsys.readouterr().out


def test_significance_reads_the_95_percent_interval():
    assert significance({"mean": -0.03, "ci95": 0.01}) == -1  # [-0.04, -0.02]
    assert significance({"mean": 0.02, "ci95": 0.01}) == 1  # [0.01, 0.03]
    assert significance({"mean": 0.01, "ci95": 0.02}) == 0  # [-0.01, 0.03] holds 0
    assert significance({"mean": 0.04, "ci95": float("nan")}) == 0  # one seed: no interval
