"""Every Python block of the README and docs/ runs as the saved script a user would make.

A page's blocks are saved in order into one temporary working directory and each is run with this
venv's Python as a subprocess (so the source tree is not on ``sys.path``: the installed package is
what runs). A block whose first line is ``# NAME.py`` is saved under that name, so later blocks of
the page may import it. A block preceded by ``<!-- fragment -->`` is an excerpt, not a script: it is
only compiled. Shell blocks are checked separately (the README's commands) or by the CLI tests.
"""

import importlib
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import NamedTuple

import pytest

import mara_agents  # noqa: F401 - loads the modules whose constants the docs may name
from mara_env import observation

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```python\n(.*?)^```", flags=re.S | re.M)
FRAGMENT = "<!-- fragment -->"
FILE_NAME = re.compile(r"# ([A-Za-z_][A-Za-z0-9_]*\.py)\n")
BLOCK_TIMEOUT = 180
# CI runs two test workers on two cores: one torch thread per script keeps them from spinning against
# each other (the MaskablePPO block took 97 s with torch's default threads and 11 s with one, on a loaded machine).
SCRIPT_ENV = {**os.environ, "OMP_NUM_THREADS": "1"}


class Block(NamedTuple):
    page: str
    line: int
    code: str
    fragment: bool


def python_blocks(path: Path) -> list[Block]:
    text = path.read_text()
    blocks = []
    for match in FENCE.finditer(text):
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1].strip()
        line = text[: match.start()].count("\n") + 1
        blocks.append(Block(str(path.relative_to(ROOT)), line, match.group(1), before == FRAGMENT))
    return blocks


def script_name(block: Block) -> str:
    named = FILE_NAME.match(block.code)
    return named.group(1) if named else f"block_{block.line}.py"


def run_page(path: Path, work: Path) -> list[tuple[Block, float, subprocess.CompletedProcess]]:
    """Save and run the page's script blocks in order; stop at the first failure."""
    runs = []
    for block in python_blocks(path):
        if block.fragment:
            compile(block.code, f"{block.page}:{block.line}", "exec")
            continue
        script = work / script_name(block)
        script.write_text(block.code)
        start = time.perf_counter()
        done = subprocess.run(
            [sys.executable, script.name],
            capture_output=True,
            text=True,
            timeout=BLOCK_TIMEOUT,
            cwd=work,
            env=SCRIPT_ENV,
        )
        runs.append((block, time.perf_counter() - start, done))
        if done.returncode != 0:
            break
    return runs


PAGES_WITH_CODE = [p for p in PAGES if python_blocks(p)]


@pytest.mark.parametrize("page", PAGES_WITH_CODE, ids=[str(p.relative_to(ROOT)) for p in PAGES_WITH_CODE])
def test_every_python_block_runs_as_a_saved_script(page, tmp_path):
    runs = run_page(page, tmp_path)
    timings = ", ".join(f"{b.page}:{b.line} {s:.1f} s" for b, s, _ in runs)
    print(f"\n{timings}")
    for block, _, done in runs:
        assert done.returncode == 0, f"{block.page}:{block.line} failed as a script:\n{done.stderr[-3000:]}"
    if page.name == "README.md":  # the env example prints the completion rate, completed, "of", arrived
        rate, completed, _, arrived = runs[0][2].stdout.split()
        assert 0.0 <= float(rate) <= 1.0 and int(completed) <= int(arrived)


def test_fragments_are_marked_and_few():
    blocks = [b for p in PAGES for b in python_blocks(p)]
    fragments = [f"{b.page}:{b.line}" for b in blocks if b.fragment]
    assert len(fragments) <= len(blocks) // 4, f"too many fragments: {fragments}"


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
    # Upper-case names that are real: the loaded package modules' constants and a few documented ones.
    importlib.import_module("mara_agents.rllib")  # optional (Ray), so not loaded by the package
    importlib.import_module("mara_env.forecast.crossfit")  # loaded only to train the flow's head
    importlib.import_module("mara_agents.mara.teacher")  # loaded by training, not by the package
    importlib.import_module("mara_agents.mara.rule_gate_refit")  # likewise
    modules = [m for name, m in list(sys.modules.items()) if name.split(".")[0] in ("mara_env", "mara_agents")]
    known = {n for module in modules for n in dir(module) if n.isupper()}
    known |= {"WORK_SCALE", "SLOT_SCALE", "MAX_REMAINING", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"}
    known |= set(importlib.import_module("mara_agents.bench.pool").ONE_THREAD_VARIABLES)  # the bench's workers set them
    for path in PAGES:
        text = path.read_text()
        left = [t for t in re.findall(r"\b[A-Z][A-Z0-9]+(?:_[A-Z0-9]+)+\b", text) if t not in known]
        assert not left, f"{path.name} still has placeholders {sorted(set(left))}"
