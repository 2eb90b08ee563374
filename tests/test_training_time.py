"""benchmarks/training_time.py: phases from a run's records, GNU time reports by hand, the launcher on a
stand-in training script (its wall time, its folder, a failed run), refusals."""

import json
import sys

import pytest

from tests.scripts import ROOT, load_script, run_script

GNU_TIME = """\tCommand being timed: "python examples/train_mara.py --generalist --out runs/d"
\tUser time (seconds): 7000.00
\tElapsed (wall clock) time (h:mm:ss or m:ss): 1:02:03.50
\tMaximum resident set size (kbytes): 16252928
\tExit status: 0
"""


def _fake_run(folder, ppo_seconds=(57.9, 1200.5)):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "warm_start.json").write_text(json.dumps({"seconds": 1244.2, "bc_loss": 0.1}))
    (folder / "warm_start_rule_gate.json").write_text(json.dumps({"seconds": 1157.5, "rounds": []}))
    rows = "".join(f"{i + 1},{4096 * (i + 1)},{s}\n" for i, s in enumerate(ppo_seconds))
    (folder / "log.csv").write_text("iteration,turns,seconds\n" + rows)


def test_gnu_time_report_by_hand(tmp_path):
    module = load_script("benchmarks/training_time.py")
    path = tmp_path / "run.time"
    path.write_text(GNU_TIME)
    wall, peak = module.read_gnu_time(path)
    assert wall == pytest.approx(3600 + 2 * 60 + 3.5)
    assert peak == pytest.approx(15.5)  # 16,252,928 KiB / 1024**2
    path.write_text("Exit status: 0\n")
    with pytest.raises(ValueError, match="not a `/usr/bin/time -v` report"):
        module.read_gnu_time(path)
    with pytest.raises(ValueError, match="cannot be read"):
        module.read_gnu_time(tmp_path / "missing.time")


def test_phases_and_report_by_hand(tmp_path):
    module = load_script("benchmarks/training_time.py")
    _fake_run(tmp_path)
    parts = module.phases(tmp_path)
    assert parts == {"warm start": 1244.2, "rule-gate step": 1157.5, "PPO": 1200.5}  # PPO: the last row
    text = module.report(3723.5, 15.5, parts, "cmd")
    assert "| start-up, loading, saving | 121 | 2.0 |" in text  # 3723.5 - 3602.2
    assert "| **total (wall clock)** | **3,724** | **62.1** |" in text
    assert "15.5 GB" in text
    (tmp_path / "warm_start_rule_gate.json").unlink()  # a run without the step
    assert "rule-gate step" not in module.phases(tmp_path)


@pytest.mark.parametrize(
    "file, text",
    [("warm_start.json", "{not json"), ("warm_start.json", '{"bc_loss": 1}'), ("warm_start.json", '{"seconds": -3}'),
     ("log.csv", "iteration,turns\n1,4096\n"), ("log.csv", "iteration,seconds\n1,soon\n")],
)  # fmt: skip
def test_a_corrupt_record_is_named(tmp_path, file, text):
    module = load_script("benchmarks/training_time.py")
    _fake_run(tmp_path)
    (tmp_path / file).write_text(text)
    with pytest.raises(ValueError, match=file):
        module.phases(tmp_path)


def test_launcher_times_a_stand_in_and_refuses_a_failed_run(tmp_path, monkeypatch):
    module = load_script("benchmarks/training_time.py")
    stand_in = tmp_path / "train.py"
    stand_in.write_text(
        "import sys, time, json, pathlib\n"
        "out = pathlib.Path(sys.argv[sys.argv.index('--out') + 1]); out.mkdir(parents=True)\n"
        "time.sleep(0.3)\n"
        "(out / 'warm_start.json').write_text(json.dumps({'seconds': 0.1}))\n"
        "sys.exit(3 if '--fail' in sys.argv else 0)\n"
    )
    monkeypatch.setattr(module, "TRAIN_SCRIPT", stand_in)
    wall, peak = module.time_run(["--generalist"], tmp_path / "run")
    assert 0.3 <= wall < 30 and 0 < peak < 2  # a Python process: some MB, not GB
    assert module.phases(tmp_path / "run") == {"warm start": 0.1}
    with pytest.raises(SystemExit, match="exited with status 3"):
        module.time_run(["--fail"], tmp_path / "failed")


def test_command_line_writes_report_from_gnu_time_and_refuses_mixed_modes(tmp_path):
    run, timed = tmp_path / "run", tmp_path / "run.time"
    _fake_run(run)
    timed.write_text(GNU_TIME)
    script = str(ROOT / "benchmarks" / "training_time.py")
    out = tmp_path / "time.md"
    done = run_script([sys.executable, script, "--run-dir", str(run), "--timed-by", str(timed), "--out", str(out)])
    assert done.returncode == 0, done.stderr
    figures = json.loads(out.with_suffix(".json").read_text())
    assert figures["wall_seconds"] == 3723.5 and figures["peak_gb"] == 15.5
    assert figures["phases"]["PPO"] == 1200.5
    base = [sys.executable, script, "--run-dir", str(run), "--out", str(out)]
    refused = run_script([*base, "--timed-by", str(timed), "--", "--quick"])
    assert refused.returncode == 2 and "--timed-by reads a finished run" in refused.stderr
    refused = run_script([*base, "--", "--quick", "--out", "x"])
    assert refused.returncode == 2 and "leave --out out" in refused.stderr
