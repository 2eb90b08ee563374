"""The bench's outputs: raw results (JSON, CSV), the table (markdown), config, failures and summary."""

from __future__ import annotations

import csv
import io
import json
import platform
import subprocess
from dataclasses import asdict
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path

import mara_agents
from mara_agents.bench.config import BenchConfig, offered_load
from mara_agents.bench.files import write_json, write_text
from mara_agents.bench.summary import summary_rows, write_summary
from mara_agents.stats import format_table, summarize

# upper_bound_rate: the episode's LP ceiling on completions per arrived task, the same for every agent
TABLE_METRICS = ("completion_rate", "wasted_work", "utilisation", "switches_per_task", "upper_bound_rate")
VERSION_PACKAGES = ("numpy", "torch", "gymnasium", "pettingzoo")


def write_reports(
    out: Path, config: BenchConfig, done: list[dict], failures: list[dict], run: dict
) -> tuple[str, list[Path]]:
    """Write the raw results, config, failures, summary and ``results.md`` (without figures).

    ``run`` describes this run (backend, counts, wall time, ``agent_env``) for ``config.json``.
    Returns the table and the files written.
    """
    records = [r for cell in done for r in cell["records"]]
    write_json(out / "results.json", records)
    write_text(out / "results.csv", records_csv(records))
    write_json(out / "failures.json", [{**f["cell"], **f["error"]} for f in failures])
    write_json(out / "config.json", config_record(config, done, run))
    summary = write_summary(out, summary_rows(config, done))
    names = ("results.json", "results.csv", "failures.json", "config.json")
    return format_results(config, done), [out / n for n in names] + summary


def records_csv(records: list[dict]) -> str:
    """The records as CSV, one row each, columns in first-seen order."""
    columns = list(dict.fromkeys(k for r in records for k in r)) or ["agent", "workload", "load", "seed"]
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows(records)
    return buffer.getvalue()


def config_record(config: BenchConfig, done: list[dict], run: dict) -> dict:
    """``config.json``: the grid, seeds, env settings, offered loads, versions, git commit and this run."""
    return {
        "config": asdict(config),
        "seeds": config.seed_list,
        "env_kwargs": config.env_kwargs(),
        "agent_env": run["agent_env"],
        "offered_loads": {load: offered_load(load) for load in config.loads},
        "versions": versions(),
        "git": git_commit(),
        "compute_seconds": sum(c["wall_seconds"] for c in done),
        "run": {k: v for k, v in run.items() if k != "agent_env"} | {"finished_at": _now()},
    }


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def versions() -> dict[str, str]:
    """Python, this project (``mara``: the version of the distribution that installed it, and its name)
    and the package versions that decide the numbers."""
    found = {"python": platform.python_version(), "mara_agents": mara_agents.__version__}
    found["mara"], found["distribution"] = "not installed", "none"
    for name in dict.fromkeys(metadata.packages_distributions().get("mara_agents", [])):
        try:
            found["mara"], found["distribution"] = metadata.version(name), name
            break
        except metadata.PackageNotFoundError:
            continue
    for name in VERSION_PACKAGES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = "not installed"
    return found


def git_commit() -> dict | None:
    """``{"commit", "dirty"}`` of the git checkout the package code runs from; ``None`` outside one."""
    root = Path(mara_agents.__file__).resolve().parents[1]
    try:
        top = _git(root, "rev-parse", "--show-toplevel")
        if Path(top).resolve() != root:  # installed into some other repository's tree: not our checkout
            return None
        commit = _git(root, "rev-parse", "HEAD")
        dirty = bool(_git(root, "status", "--porcelain", "--untracked-files=no", "--", "mara_agents", "mara_env"))
    except (OSError, subprocess.SubprocessError):
        return None
    return {"commit": commit, "dirty": dirty}


def _git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=10, check=True)
    return done.stdout.strip()


def format_results(config: BenchConfig, done: list[dict]) -> str:
    """A markdown table: one line per agent x workload x load, ``mean ± 95% CI`` per metric."""
    summaries = {(c["cell"]["agent"], c["cell"]["workload"], c["cell"]["load"]): summarize(c["records"]) for c in done}
    header = ["agent", "workload", "load", *(m.replace("_", " ") for m in TABLE_METRICS)]
    rows = []
    for key in ((a, w, load) for a in config.agents for w in config.workloads for load in config.loads):
        stats = summaries.get(key)
        rows.append([*key, *(stats.get(m) if stats else "failed" for m in TABLE_METRICS)])
    return format_table(header, rows)


def results_markdown(config: BenchConfig, table: str, failures: list[dict], figures: list[Path]) -> str:
    """``results.md``: what was run, the table, the failed cells and links to the ``figures``."""
    seeds = config.seed_list
    arrivals = (
        f"trace {config.arrivals} (the load does not apply)" if config.is_trace else f"{config.arrivals} arrivals"
    )
    head = (
        f"agents x workloads x loads = {len(config.agents)} x {len(config.workloads)} x {len(config.loads)} cells; "
        f"seeds {seeds[0]}..{seeds[-1]} ({len(seeds)} per cell); {config.num_nodes} nodes, "
        f"{config.max_tasks} table rows, {config.horizon} slots, {arrivals}, {config.curve_split}-split curves; "
        "mean ± 95% CI over seeds (n/a: one seed)."
    )
    failed = [f"- {m.splitlines()[0]}" for m in dict.fromkeys(f["error"]["message"] for f in failures)] or ["none"]
    images = [f"![{path.stem.replace('_', ' ')}]({path.name})" for path in figures]
    parts = ["# mara bench", head, table, "Failed cells (retried on a rerun):", "\n".join(failed), *images]
    return "\n\n".join(parts) + "\n"


def write_markdown(out: Path, config: BenchConfig, table: str, failures: list[dict], figures: list[Path]) -> Path:
    path = out / "results.md"
    write_text(path, results_markdown(config, table, failures, figures))
    return path


def cell_records(out: str | Path) -> dict[tuple[str, str, str], list[dict]]:
    """The records of a finished bench folder (``results.json``) by ``(agent, workload, load)``."""
    grouped: dict[tuple[str, str, str], list[dict]] = {}
    for record in json.loads((Path(out) / "results.json").read_text(encoding="utf-8")):
        grouped.setdefault((record["agent"], record["workload"], record["load"]), []).append(record)
    return grouped
