"""The sdist and the wheel build, and each installs into a fresh venv where the banks, weights and CLI work.

Offline and fast: the fresh venv borrows this venv's dependencies through a ``.pth`` line (a plain
path line, so this venv's own editable install of the project is not activated there) and installs
the built file with ``--no-deps``. Everything runs from a temporary working directory, so the
source tree is never on ``sys.path``: what loads is the installed copy.
"""

import json
import subprocess
import sys
import sysconfig
from importlib import metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DIST_NAME = "mara-sched"

# Run in the fresh venv: every shipped data file loads from the installed copy.
CHECK = """
import sys
from importlib import metadata
from pathlib import Path

import mara_agents, mara_env
from mara_agents.mara.scheduler import SHIPPED_CHECKPOINT
from mara_env.forecast.flow import WEIGHTS
from mara_env.workloads import BANK_NAMES, load_bank
from mara_env.workloads.bank import BANK_DIR

prefix = Path(sys.prefix).resolve()
for path in (mara_env.__file__, mara_agents.__file__, BANK_DIR, WEIGHTS, SHIPPED_CHECKPOINT):
    assert prefix in Path(path).resolve().parents, f"{path} is not inside {prefix}"
banks = {name: len(load_bank(name).losses) for name in BANK_NAMES}
assert all(n > 0 for n in banks.values()), banks
records = mara_agents.evaluate("mara", [0], horizon=30)  # shipped policy weights + flow forecaster weights
assert records[0]["slots"] == 30
print("version", metadata.version("DIST"), "banks", banks)
""".replace("DIST", DIST_NAME)


@pytest.fixture(scope="module")
def dists(tmp_path_factory):
    out = tmp_path_factory.mktemp("dist")
    # build's default: the sdist first, then the wheel from the unpacked sdist (so the sdist must be complete).
    cmd = [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(ROOT)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=out)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    wheels, sdists = sorted(out.glob("*.whl")), sorted(out.glob("*.tar.gz"))
    assert len(wheels) == 1 and len(sdists) == 1, sorted(p.name for p in out.iterdir())
    return {"wheel": wheels[0], "sdist": sdists[0]}


def fresh_venv(where: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True, timeout=120)
    python = where / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    (Path(site) / "borrowed_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return python


def test_distribution_names(dists):
    assert dists["wheel"].name.startswith("mara_sched-") and dists["sdist"].name.startswith("mara_sched-")
    assert metadata.version(DIST_NAME) == dists["wheel"].name.split("-")[1]


@pytest.mark.parametrize("kind", ["wheel", "sdist"])
def test_installs_into_a_fresh_venv_where_banks_weights_and_cli_work(dists, kind, tmp_path):
    python = fresh_venv(tmp_path / "venv")
    install = [str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--no-build-isolation"]
    done = subprocess.run([*install, str(dists[kind])], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]

    done = subprocess.run([str(python), "-c", CHECK], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.startswith(f"version {metadata.version(DIST_NAME)} banks")

    mara = tmp_path / "venv" / "bin" / "mara"
    args = ["bench", "--agents", "edf", "--seeds", "1", "--horizon", "30", "--quiet", "--out", "bench"]
    done = subprocess.run([str(mara), *args], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "| edf |" in done.stdout
    versions = json.loads((tmp_path / "bench" / "config.json").read_text())["versions"]
    assert versions["distribution"] == DIST_NAME and versions["mara"] == metadata.version(DIST_NAME)
