"""Every benchmark and example script answers ``--help`` with its usage, and does nothing else."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.scripts import ROOT

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
