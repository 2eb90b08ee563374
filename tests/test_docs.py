"""The README's example runs, the docs name every observation feature, and the examples run."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

from mara_env import observation

ROOT = Path(__file__).resolve().parents[1]


def test_readme_api_example_runs(capsys):
    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", readme, flags=re.S)
    assert blocks, "README.md should hold the env API example"
    exec(compile(blocks[0], "README.md", "exec"), {})
    rate, completed, _, arrived = capsys.readouterr().out.split()
    assert 0.0 <= float(rate) <= 1.0 and int(completed) <= int(arrived)


def test_readme_commands_install_then_run():
    readme = (ROOT / "README.md").read_text()
    for marker, tail in (("main-command", "mara bench"), ("test-command", "pytest")):
        command = readme.split(f"<!-- {marker} -->")[1].split("```bash\n")[1].split("\n")[0]
        assert command.startswith("python3 -m venv .venv") and "pip install" in command and tail in command


def test_environment_doc_names_every_feature():
    doc = (ROOT / "docs" / "environment.md").read_text()
    names = (
        observation.HEADER
        + observation.NODE_FEATURES
        + observation.GLOBAL_FEATURES
        + observation.ROW_FEATURES
        + observation.FORECAST_FEATURES
        + observation.WINDOW_FEATURES
    )
    missing = [n for n in names if f"`{n}`" not in doc]
    assert not missing, f"docs/environment.md does not describe {missing}"


@pytest.mark.parametrize(
    "script, args",
    [("custom_scheduler.py", ["--seeds", "2", "--horizon", "60"]), ("gantt.py", ["--horizon", "40"])],
)
def test_examples_run(tmp_path, script, args):
    if script == "gantt.py":
        args = [*args, "--out", str(tmp_path / "g.png")]
    else:  # runs mara bench on examples.custom_scheduler:CappedEDF, which imports from the repository root
        args = [*args, "--quiet", "--out", str(tmp_path / "bench")]
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / script), *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    if script == "gantt.py":
        assert (tmp_path / "g.png").stat().st_size > 1000
    else:
        assert "| examples.custom_scheduler:CappedEDF | synthetic | train |" in done.stdout


def test_docs_have_no_unfilled_placeholders():
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = path.read_text()
        left = re.findall(r"\b[A-Z][A-Z0-9]+(?:_[A-Z0-9]+)+\b", text)
        left = [t for t in left if t not in {"WORK_SCALE", "SLOT_SCALE", "MAX_REMAINING", "OMP_NUM_THREADS"}]
        assert not left, f"{path.name} still has placeholders {sorted(set(left))}"
