"""Every benchmark and example script answers ``--help`` with its usage, and does nothing else."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.scripts import ROOT, run_script

# custom_scheduler.py is a tutorial read top to bottom (it takes no options); __init__.py is no script
NOT_COMMANDS = {"examples/__init__.py", "examples/custom_scheduler.py"}
SCRIPTS = sorted(
    str(path.relative_to(ROOT))
    for folder in ("benchmarks", "examples")
    for path in (ROOT / folder).glob("*.py")
    if str(path.relative_to(ROOT)) not in NOT_COMMANDS
)


def test_the_scripts_are_found():
    assert len(SCRIPTS) >= 30 and "examples/train_mara.py" in SCRIPTS and "benchmarks/bank_stats.py" in SCRIPTS


@pytest.mark.parametrize("script", SCRIPTS)
def test_script_answers_help(script, tmp_path):
    done = subprocess.run(
        [sys.executable, str(ROOT / script), "--help"], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage:"), done.stdout[:200]
    assert list(tmp_path.iterdir()) == []  # asking for help writes nothing


@pytest.mark.parametrize(
    ("body", "status", "stderr"),
    [
        ("print('hi')", 0, ""),
        ("raise SystemExit('no such file: x')", 1, "no such file: x\n"),
        ("import argparse; argparse.ArgumentParser().parse_args(['--nope'])", 2, "unrecognized arguments: --nope"),
        ("raise ValueError('bad')", 1, "ValueError: bad"),
    ],
)
def test_run_script_exits_as_the_interpreter_would(tmp_path, body, status, stderr):
    """The in-process runner the option tests use gives the status and stderr a real process gives."""
    script = tmp_path / "s.py"
    script.write_text(f"import sys\nprint(sys.argv[1:])\n{body}\n")
    command = [sys.executable, str(script), "a"]
    real, here = subprocess.run(command, capture_output=True, text=True), run_script(command)
    assert here.returncode == real.returncode == status
    assert here.stdout == real.stdout and here.stdout.startswith("['a']")
    assert stderr in here.stderr and stderr in real.stderr
    assert here.stderr.splitlines()[-1:] == real.stderr.splitlines()[-1:]
