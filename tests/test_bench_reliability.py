"""``mara bench`` survives its agents: exceptions, BaseExceptions, process exits, crashes and hangs fail
only their own cell (also with one job); Ctrl-C keeps finished cells; workers end with the bench."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.test_bench import GRID, HERE, ROOT, bench

ONE_LOAD = ["--workloads", "synthetic", "--loads", "train", "--seeds", "2", "--horizon", "40"]
ONE_LOAD += ["--num-nodes", "4", "--quiet"]
MISBEHAVING = {
    "RaisesAtSlot3": "RuntimeError: scheduler bug",
    "ExitsAtSlot3": "SystemExit: 3",
    "InterruptsAtSlot3": "KeyboardInterrupt",
    "EndsProcessAtSlot3": "its worker process exited with code 0",
    "CrashesAtSlot3": "its worker process was killed by signal SIGSEGV",
    "HangsAtSlot3": "timed out after 4 s (cell timeout); its worker was stopped and replaced",
}


@pytest.fixture(autouse=True)
def _repo_root(monkeypatch):
    monkeypatch.chdir(ROOT)


def failures_by_agent(out: Path) -> dict[str, dict]:
    return {f["agent"].split(":")[-1]: f for f in json.loads((out / "failures.json").read_text())}


def test_whatever_an_agent_does_fails_only_its_cell_with_seed_and_slot(tmp_path, capsys):
    out = tmp_path / "run"
    agents = ["edf", *(f"{HERE}:{name}" for name in MISBEHAVING), "uniform"]
    assert bench(out, agents, "--jobs", "2", "--cell-timeout", "4", grid=ONE_LOAD) == 1
    failed = failures_by_agent(out)
    assert set(failed) == set(MISBEHAVING)
    for name, says in MISBEHAVING.items():
        where = f"agent '{HERE}:{name}', workload 'synthetic', load 'train', seed 0, slot 3"
        assert failed[name]["message"].startswith(where) and says in failed[name]["message"], failed[name]
        assert (failed[name]["seed"], failed[name]["slot"]) == (0, 3)
    assert {r["agent"] for r in json.loads((out / "results.json").read_text())} == {"edf", "uniform"}
    assert "8 run now, 0 reused, 6 failed" in capsys.readouterr().out


def test_with_one_job_an_exit_or_interrupt_in_the_agent_still_fails_only_its_cell(tmp_path):
    out = tmp_path / "run"
    agents = [f"{HERE}:EndsProcessAtSlot3", f"{HERE}:InterruptsAtSlot3", "edf"]
    assert bench(out, agents, "--jobs", "1", grid=ONE_LOAD) == 1
    assert set(failures_by_agent(out)) == {"EndsProcessAtSlot3", "InterruptsAtSlot3"}
    assert {r["agent"] for r in json.loads((out / "results.json").read_text())} == {"edf"}


def _start(out: Path, *agents: str, env: dict | None = None) -> subprocess.Popen:
    command = [sys.executable, "-m", "mara_agents.cli", "bench", "--agents", *agents, *GRID, "--out", str(out)]
    command[-1:] = [str(out), "--horizon", "150", "--jobs", "2"]
    environ = {**os.environ, **(env or {})}
    return subprocess.Popen(
        command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environ,
        preexec_fn=_default_sigint,  # a test runner's worker may ignore SIGINT, and children inherit that
    )  # fmt: skip


def _default_sigint() -> None:
    """In the bench's process before it starts: Ctrl-C acts as in a terminal."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _workers(pid: int) -> list[int]:
    found = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout
    return [int(p) for p in found.split()]


def _running(pid: int) -> bool:
    """Alive and not a zombie waiting for its new parent to reap it."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _wait_for(condition, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


@pytest.mark.skipif(not Path("/proc").is_dir() or os.name != "posix", reason="needs /proc and POSIX signals")
def test_workers_run_numerical_libraries_on_one_thread_unless_the_user_says(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setenv("MKL_NUM_THREADS", "3")
    out = tmp_path / "run"
    assert bench(out, [f"{HERE}:SaysItsThreads"], "--jobs", "1", grid=ONE_LOAD) == 1
    says = failures_by_agent(out)["SaysItsThreads"]["message"]
    assert "OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=3" in says, says
    assert "OPENBLAS_NUM_THREADS" not in os.environ  # the bench's own process is left as it was


def test_ctrl_c_keeps_finished_cells_and_a_rerun_resumes(tmp_path, capsys):
    out = tmp_path / "run"
    bench_proc = _start(out, "edf", f"{HERE}:SlowEDF", env={"HOLD_FOR_EDF_CELLS": str(out / "cells")})
    assert _wait_for(lambda: len(list((out / "cells").glob("edf__*.json"))) == 2, 90), "edf never finished"
    workers = _workers(bench_proc.pid)
    bench_proc.send_signal(signal.SIGINT)  # what the terminal sends the bench on Ctrl-C
    _, err = bench_proc.communicate(timeout=60)
    assert bench_proc.returncode == 130, err
    assert "interrupted" in err and "run the same command again to resume" in err and "Traceback" not in err
    assert _wait_for(lambda: not any(_running(w) for w in workers), 5)
    saved = json.loads((out / "results.json").read_text())
    assert {r["agent"] for r in saved} == {"edf"} and len(saved) == 4
    assert json.loads((out / "config.json").read_text())["run"]["interrupted"] is True
    capsys.readouterr()
    assert bench(out, ["edf"], "--horizon", "150") == 0  # the same cells: reused, not rerun
    assert "2 cells: 0 run now, 2 reused, 0 failed" in capsys.readouterr().out


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc")
def test_workers_end_with_the_bench_after_kill_9(tmp_path):
    bench_proc = _start(tmp_path / "run", f"{HERE}:SlowEDF")
    assert _wait_for(lambda: len(_workers(bench_proc.pid)) == 2, 60)
    workers = _workers(bench_proc.pid)
    time.sleep(1.0)  # into their first cells
    bench_proc.kill()
    bench_proc.wait()
    assert _wait_for(lambda: not any(_running(w) for w in workers), 3), "orphan workers kept running"
