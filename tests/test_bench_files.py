"""The bench's files: invalid cell files are recomputed, temporary files are unique and never followed
out of ``--out``, and two benches on one folder leave it whole."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from mara_agents.bench import BenchConfig, read_cell
from mara_agents.bench.files import write_json
from tests.test_bench import ROOT, bench, rows

ONE_CELL = ["--workloads", "synthetic", "--loads", "train", "--seeds", "2", "--horizon", "40"]
ONE_CELL += ["--num-nodes", "4", "--quiet", "--jobs", "1"]


@pytest.fixture(autouse=True)
def _repo_root(monkeypatch):
    monkeypatch.chdir(ROOT)


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    """One finished one-cell bench, copied by the tests that tamper with it."""
    out = tmp_path_factory.mktemp("finished") / "run"
    assert bench(out, ["edf"], grid=ONE_CELL) == 0
    return out


def _cell(out: Path):
    config = BenchConfig(agents=("edf",), loads=("train",), seeds=2, horizon=40, num_nodes=4)
    (cell,) = config.cells()
    return cell


def test_a_cell_file_that_is_not_a_result_is_recomputed(finished, tmp_path, capsys):
    cell = _cell(finished)
    assert read_cell(finished, cell) is not None
    out = tmp_path / "run"
    subprocess.run(["cp", "-r", str(finished), str(out)], check=True)
    for content in ("[1, 2]", '"text"', "{}", "{not json", "", "null"):  # null stays for the rerun
        (out / "cells" / cell.file_name).write_text(content)
        assert read_cell(out, cell) is None, content
    assert bench(out, ["edf"], grid=ONE_CELL) == 0
    assert "1 cells: 1 run now, 0 reused, 0 failed" in capsys.readouterr().out
    assert read_cell(out, cell) is not None and rows(out / "results.json") == rows(finished / "results.json")


def test_a_cell_file_of_another_config_or_with_bad_records_is_not_reused(finished):
    cell = _cell(finished)
    saved = json.loads((finished / "cells" / cell.file_name).read_text())
    tampered = [
        {**saved, "key": "0" * 12},
        {**saved, "records": saved["records"][:1]},
        {**saved, "records": [{**saved["records"][0], "seed": 7}, saved["records"][1]]},
        {**saved, "records": [None, saved["records"][1]]},
        {**saved, "records": [{**saved["records"][0], "completion_rate": "high"}, saved["records"][1]]},
        {**saved, "error": {"message": "x"}},
        {**saved, "cell": {**saved["cell"], "seeds": [5, 6]}},
    ]
    for i, bad in enumerate(tampered):
        folder = finished.parent / f"t{i}"
        (folder / "cells").mkdir(parents=True)
        (folder / "cells" / cell.file_name).write_text(json.dumps(bad))
        assert read_cell(folder, cell) is None, i


def test_a_symlink_planted_at_the_old_temporary_names_is_never_written_through(tmp_path):
    out, outside = tmp_path / "run", tmp_path / "outside.txt"
    outside.write_text("precious")
    (out / "cells").mkdir(parents=True)
    cell = _cell(out)
    for name in ("results.json.tmp", "config.json.tmp", "summary.json.tmp", "results.md.tmp"):
        (out / name).symlink_to(outside)
    (out / "cells" / (cell.file_name + ".tmp")).symlink_to(outside)
    (out / "results.json").symlink_to(outside)  # even at the final name: replaced, not followed
    assert bench(out, ["edf"], grid=ONE_CELL) == 0
    assert outside.read_text() == "precious"
    assert not (out / "results.json").is_symlink() and len(json.loads((out / "results.json").read_text())) == 2


def test_concurrent_writers_never_tear_a_file(tmp_path):
    path = tmp_path / "data.json"
    write_json(path, {"writer": -1, "rows": []})
    errors: list[BaseException] = []

    def write(writer: int) -> None:
        try:
            for i in range(60):
                write_json(path, {"writer": writer, "rows": list(range(200 * i))})
        except BaseException as err:  # noqa: BLE001 (reported below)
            errors.append(err)

    threads = [threading.Thread(target=write, args=(w,)) for w in range(4)]
    for thread in threads:
        thread.start()
    reads = 0
    while any(t.is_alive() for t in threads):
        assert isinstance(json.loads(path.read_text()), dict)  # always a whole file
        reads += 1
    assert not errors and reads > 0
    assert [p.name for p in tmp_path.iterdir()] == ["data.json"]  # no temporary file left behind


def test_two_benches_on_one_folder_leave_it_whole(tmp_path, finished):
    out = tmp_path / "run"
    command = [sys.executable, "-m", "mara_agents.cli", "bench", "--agents", "edf", "uniform", *ONE_CELL, "--out"]
    both = [
        subprocess.Popen([*command, str(out)], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in "ab"
    ]
    for proc in both:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err.decode()
    saved = rows(out / "results.json")
    assert [r["agent"] for r in saved] == ["edf", "edf", "uniform", "uniform"]
    assert saved[:2] == rows(finished / "results.json")
    for name in ("config.json", "summary.json", "failures.json"):
        json.loads((out / name).read_text())
    assert not list(out.glob("*.tmp")) and not list((out / "cells").glob("*.tmp"))
