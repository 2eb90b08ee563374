"""How long a ``examples/train_mara.py`` run takes, phase by phase, and its peak memory.

    python benchmarks/training_time.py --run-dir runs/default_run --out docs/results/training_time.md -- --generalist
    python benchmarks/training_time.py --run-dir runs/quick --out runs/quick_time.md -- --quick   # about a minute
    python benchmarks/training_time.py --run-dir runs/default_run --timed-by runs/default_run.time \\
        --out docs/results/training_time.md            # a run already timed by `/usr/bin/time -v -o FILE`

Runs ``train_mara.py`` with the arguments after ``--`` and ``--out RUN_DIR`` as a child process, and
times it from outside: wall-clock seconds from launch to exit, and the peak resident size of the
largest single process of the run (the kernel's ``ru_maxrss`` of the child and the workers it waited
for, as ``/usr/bin/time -v`` reports it; workers alive at once are not summed). The phases come from
the run's own records: the warm start (``warm_start.json``), the rule-gate step
(``warm_start_rule_gate.json``, where the run has one), the split step (``warm_start_split.json``, likewise)
and PPO (the last ``seconds`` of ``log.csv``);
what is left is start-up, loading and saving. Writes a markdown table to ``--out`` and the same
figures as JSON beside it. Time it on a quiet machine: anything else on the cores slows every phase.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

TRAIN_SCRIPT = Path(__file__).resolve().parent.parent / "examples" / "train_mara.py"
PHASE_FILES = (
    ("warm start", "warm_start.json"),
    ("rule-gate step", "warm_start_rule_gate.json"),
    ("split step", "warm_start_split.json"),
)


def time_run(train_args: list[str], run_dir: Path) -> tuple[float, float]:
    """Run ``train_mara.py train_args --out run_dir``; its wall-clock seconds and peak resident GB.
    ``SystemExit`` with the run's exit status when it fails."""
    began = time.perf_counter()
    child = subprocess.Popen([sys.executable, str(TRAIN_SCRIPT), *train_args, "--out", str(run_dir)])
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - began
    code = os.waitstatus_to_exitcode(status)
    child.returncode = code  # reaped by wait4: tell Popen, so it does not wait again
    if code != 0:
        raise SystemExit(f"train_mara.py exited with status {code}; no timing written")
    return seconds, usage.ru_maxrss / 1024**2  # ru_maxrss is in KiB on Linux


def read_gnu_time(path: Path) -> tuple[float, float]:
    """Wall-clock seconds and peak resident GB from a ``/usr/bin/time -v -o path`` report; ``ValueError``
    naming ``path`` when it cannot be read or is not such a report."""
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as error:
        raise ValueError(f"{path}: cannot be read ({error})") from error
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): ([\d:.]+)", text)
    peak = re.search(r"Maximum resident set size \(kbytes\): (\d+)", text)
    if wall is None or peak is None:
        raise ValueError(f"{path}: not a `/usr/bin/time -v` report (no wall-clock time or maximum resident size)")
    seconds = 0.0
    for part in wall.group(1).split(":"):
        seconds = seconds * 60 + float(part)
    return seconds, int(peak.group(1)) / 1024**2


def phases(run_dir: Path) -> dict[str, float]:
    """Seconds per phase from the run's records (a phase without its record is left out); ``ValueError``
    naming the record that is not what ``train_mara.py`` writes."""
    found = {}
    for name, file in PHASE_FILES:
        if (run_dir / file).is_file():
            found[name] = _record_seconds(run_dir / file, lambda text: json.loads(text)["seconds"])
    log = run_dir / "log.csv"
    if log.is_file():
        rows = log.read_text().splitlines()
        if len(rows) > 1:  # a header and at least one iteration
            found["PPO"] = _record_seconds(log, lambda text: list(csv.DictReader(text.splitlines()))[-1]["seconds"])
    return found


def _record_seconds(path: Path, read) -> float:
    """``read(path's text)`` as a number of seconds, or a ``ValueError`` naming ``path``."""
    try:
        seconds = float(read(path.read_text()))
    except (OSError, ValueError, KeyError, TypeError, IndexError) as error:
        raise ValueError(f"{path}: no readable 'seconds' in it ({type(error).__name__}: {error})") from error
    if not seconds >= 0:
        raise ValueError(f"{path}: 'seconds' must be a number >= 0, got {seconds}")
    return seconds


def report(wall: float, peak_gb: float, parts: dict[str, float], command: str) -> str:
    """A markdown table: each phase in seconds and minutes, the rest, the total and the peak."""
    lines = [f"`{command}`", "", "| phase | seconds | minutes |", "|---|---|---|"]
    for name, seconds in parts.items():
        lines.append(f"| {name} | {seconds:,.0f} | {seconds / 60:.1f} |")
    rest = wall - sum(parts.values())
    lines.append(f"| start-up, loading, saving | {rest:,.0f} | {rest / 60:.1f} |")
    lines.append(f"| **total (wall clock)** | **{wall:,.0f}** | **{wall / 60:.1f}** |")
    lines += ["", f"Peak resident size of the largest single process: {peak_gb:.1f} GB."]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run-dir", type=Path, required=True, help="the run's --out (train_mara.py writes it)")
    parser.add_argument("--out", type=Path, required=True, help="the markdown report (JSON beside it)")
    parser.add_argument("--timed-by", type=Path, help="time nothing: read a `/usr/bin/time -v -o FILE` report")
    parser.add_argument("--command", help="with --timed-by: the command that report timed, for the report")
    parser.add_argument("train_args", nargs="*", help="after --: train_mara.py's arguments, without --out")
    args = parser.parse_args()
    if args.timed_by is not None:
        if args.train_args:
            parser.error("--timed-by reads a finished run: give no train_mara.py arguments")
        try:
            wall, peak = read_gnu_time(args.timed_by)
        except ValueError as error:
            parser.error(str(error))
        command = args.command or f"a run into {args.run_dir}"
    else:
        if "--out" in args.train_args:
            parser.error("the run's folder is --run-dir; leave --out out of train_mara.py's arguments")
        wall, peak = time_run(args.train_args, args.run_dir)
        command = " ".join(["python examples/train_mara.py", *args.train_args, "--out", str(args.run_dir)])
    try:
        parts = phases(args.run_dir)
    except ValueError as error:
        raise SystemExit(f"the run's records: {error}") from None
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(report(wall, peak, parts, command))
    figures = {"command": command, "wall_seconds": round(wall, 1), "peak_gb": round(peak, 2), "phases": parts}
    args.out.with_suffix(".json").write_text(json.dumps(figures, indent=1) + "\n")
    print(args.out.read_text())


if __name__ == "__main__":
    main()
