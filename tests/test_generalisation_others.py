"""benchmarks/generalisation.py --others-from: the other schedulers' cells read from an earlier run's records."""

import gzip
import json

import pytest

from tests.scripts import load_script


def _module():
    return load_script("benchmarks/generalisation.py")


def _record(agent, seed, rate, workload="rl", load="heavy", nodes=64, trace=False):
    return {"agent": agent, "workload": workload, "load": load, "nodes": nodes, "trace": trace, "seed": seed,
            "completion_rate": rate, "utilisation": 0.9, "upper_bound_rate": 0.95}  # fmt: skip


def _write(path, records):
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        json.dump(records, handle)
    return path


def test_others_are_read_by_cell_sorted_by_seed_and_merged_with_maras_cells(tmp_path):
    module = _module()
    stored = [
        _record("srw", 1, 0.4), _record("srw", 0, 0.5), _record("edf", 0, 0.3), _record("edf", 1, 0.2),
        _record("mara_generalist", 0, 0.9), _record("mara_generalist", 1, 0.9),  # not asked for: left out
        _record("srw", 0, 0.7, workload="mixed", load="train", nodes=32, trace=True),
    ]  # fmt: skip
    others = module.load_others([_write(tmp_path / "a.json.gz", stored)], ["srw", "edf"])
    assert [r["seed"] for r in others[("srw", "rl", "heavy", 64)]] == [0, 1]
    assert ("srw", "trace", "-", 32) in others and not any(key[0] == "mara_generalist" for key in others)
    played = {("mara", "rl", "heavy", 64): [_record("mara", 1, 0.45), _record("mara", 0, 0.6)]}  # out of order
    merged = module.merge_others(played, others, ["srw", "edf"])
    row, diff = module.cell_row(merged, ("rl", "heavy", 64), ["srw", "edf", "mara"], "mara")
    # best other: srw (mean 0.45); mara - srw per seed: +0.1 and +0.05, so sd 0.0354 and t(1) 12.706
    assert row[4] == "srw 0.450" and diff["mean"] == pytest.approx(0.075)
    assert diff["ci95"] == pytest.approx(12.706 * 0.035355 / 2**0.5, rel=1e-3)  # unpaired seeds: 1.59


def test_other_seeds_or_a_missing_cell_are_refused(tmp_path):
    module = _module()
    others = module.load_others(
        [_write(tmp_path / "a.json.gz", [_record("srw", 0, 0.5), _record("srw", 2, 0.4)])], ["srw"]
    )
    played = {("mara", "rl", "heavy", 64): [_record("mara", 0, 0.6), _record("mara", 1, 0.45)]}
    with pytest.raises(SystemExit, match=r"srw at rl/heavy, M=64 has seeds \[0, 2\]; MARA played seeds \[0, 1\]"):
        module.merge_others(played, others, ["srw"])
    elsewhere = {("mara", "vision", "train", 4): [_record("mara", 0, 0.6, "vision", "train", 4)]}
    with pytest.raises(SystemExit, match="srw at vision/train, M=4 has no records"):
        module.merge_others(elsewhere, others, ["srw"])


def test_an_agent_without_records_or_a_corrupt_file_is_refused(tmp_path):
    module = _module()
    good = _write(tmp_path / "a.json.gz", [_record("srw", 0, 0.5)])
    with pytest.raises(SystemExit, match=r"no records of \['lara'\]"):
        module.load_others([good], ["srw", "lara"])
    corrupt = tmp_path / "b.json.gz"
    corrupt.write_bytes(b"not gzip")
    with pytest.raises(SystemExit, match="b.json.gz: not the raw records of a generalisation report"):
        module.load_others([corrupt], ["srw"])
    with pytest.raises(SystemExit, match="missing.json: not the raw records"):
        module.load_others([tmp_path / "missing.json"], ["srw"])


def test_replay_plays_nothing_and_summarises_the_stored_records(tmp_path, monkeypatch):
    module = _module()
    stored = [_record("srw", 0, 0.5), _record("srw", 1, 0.4), _record("mara", 1, 0.45), _record("mara", 0, 0.6)]
    records = _write(tmp_path / "a.json.gz", stored)
    out = tmp_path / "table.md"
    argv = ["generalisation.py", "--agents", "srw", "--mara", "mara", "--others-from", str(records), "--out", str(out)]
    monkeypatch.setattr("sys.argv", [*argv, "--replay"])
    module.main()
    report = out.read_text()
    # mara - srw per seed: +0.1 and +0.05 (the first test's cell), so the one cell's mean is +7.5 pp
    assert "| rl | heavy | 64 | 0.525 | srw 0.450 |" in report and "over the 1 cells: +7.5 pp" in report
    monkeypatch.setattr("sys.argv", argv[:5] + ["--replay"])
    with pytest.raises(SystemExit):  # nothing to replay from
        module.main()
