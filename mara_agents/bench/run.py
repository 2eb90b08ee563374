""":func:`run_bench`: check, build the agents once, run the missing cells, write every output."""

from __future__ import annotations

import importlib.util
import os
import time
from dataclasses import dataclass
from pathlib import Path

from tqdm.auto import tqdm

from mara_agents.bench.backends import map_local, map_ray
from mara_agents.bench.cells import Cell, cell_path, read_cell
from mara_agents.bench.config import ENV_DEFAULTS, BenchConfig
from mara_agents.bench.figures import FIGURES, have_matplotlib, write_charts
from mara_agents.bench.files import output_lock, write_json
from mara_agents.bench.pool import Task, WorkerPool
from mara_agents.bench.report import write_markdown, write_reports

AUTO = "auto"
# The auto cell timeout: seconds per episode of the default size (8 nodes x 300 slots), scaled by the
# episode's node turns and the seeds, and never under MIN_CELL_TIMEOUT. The slowest packaged
# scheduler, mara, took 8.1 s per episode (10.4 s at most) at the extreme load on 2 cores shared with
# about 8 busy processes: 60 s leaves a margin of 6x over that.
EPISODE_SECONDS = 60.0
MIN_CELL_TIMEOUT = 600.0
DEFAULT_CELL_TIMEOUT = AUTO


@dataclass
class BenchResult:
    """What :func:`run_bench` did: cells in the grid, run now, reused from disk; the errors, table, files."""

    out: Path
    total: int
    ran: int
    reused: int
    failures: list[dict]
    table: str
    files: list[Path]
    wall_seconds: float
    interrupted: bool = False


def default_jobs() -> int:
    """``min(2, cpu count)``: the default pool size."""
    return min(2, os.cpu_count() or 1)


def auto_cell_timeout(config: BenchConfig) -> float:
    """The default cell timeout of ``config``: :data:`EPISODE_SECONDS` per default-size episode."""
    size = (config.num_nodes * config.horizon) / (ENV_DEFAULTS.num_nodes * ENV_DEFAULTS.horizon)
    return max(MIN_CELL_TIMEOUT, EPISODE_SECONDS * config.seeds * size)


def check_run(config: BenchConfig, out: Path, jobs: int, ray_address: str | None, cell_timeout: float | None) -> None:
    """``ValueError`` for a bad run setting, before any work."""
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"jobs must be an integer >= 1, got {jobs!r}")
    if cell_timeout is not None and (
        isinstance(cell_timeout, bool) or not isinstance(cell_timeout, (int, float)) or not 0 < cell_timeout < 1e9
    ):
        raise ValueError(f"cell_timeout must be a number of seconds > 0 (or None for no limit), got {cell_timeout!r}")
    if ray_address is not None and importlib.util.find_spec("ray") is None:
        raise ValueError("the Ray backend needs ray, which is not installed: pip install 'mara[ray]'")
    for path in (out, out / "cells"):
        if path.exists() and not path.is_dir():
            raise ValueError(f"out must be a folder, but {str(path)!r} is a file")


def run_bench(
    config: BenchConfig,
    out: str | Path,
    jobs: int | None = None,
    ray_address: str | None = None,
    progress: bool = True,
    cell_timeout: float | str | None = AUTO,
) -> BenchResult:
    """Run the cells of ``config`` not already saved in ``out``, then write every output.

    Parameters
    ----------
    config:
        The grid; it is checked first (``ValueError`` before any work and before ``out`` is created).
    out:
        Output folder: ``cells/`` (one JSON per finished cell), ``results.json``, ``results.csv``,
        ``results.md``, ``summary.json``, ``summary.csv``, ``config.json``, ``failures.json`` and the
        PNG figures.
    jobs:
        Worker processes (default ``min(2, cpu count)``); with Ray, the CPUs of a new local instance.
    ray_address:
        ``None`` for the local workers; ``"local"`` or a cluster address for Ray.
    progress:
        Show a progress bar over the cells.
    cell_timeout:
        Seconds a cell may run before it is failed and its worker replaced; ``None``: no limit;
        ``"auto"`` (default): 60 s per episode of the default size (8 nodes, 300 slots), scaled by
        nodes x horizon and by the seeds, at least 600 s (:func:`auto_cell_timeout`).

    On Ctrl-C (``KeyboardInterrupt``) the workers are stopped, the outputs are written from the cells
    finished so far, and the ``KeyboardInterrupt`` is raised again; a rerun resumes.
    """
    jobs = default_jobs() if jobs is None else jobs
    out = Path(out)
    config.validate()
    cell_timeout = auto_cell_timeout(config) if cell_timeout == AUTO else cell_timeout
    check_run(config, out, jobs, ray_address, cell_timeout)
    start = time.perf_counter()
    cells = config.cells(search_path=os.getcwd())
    with WorkerPool(jobs if ray_address is None else 1, cell_timeout) as pool:
        agent_env = build_agents(pool, config)  # ValueError for an agent that cannot be built, before mkdir
        (out / "cells").mkdir(parents=True, exist_ok=True)
        finished = {cell.key: read_cell(out, cell) for cell in cells}
        todo = [c for c in cells if finished[c.key] is None]
        failures, interrupted = [], False
        local = ray_address is None
        results = map_local(pool, todo) if local else map_ray(todo, ray_address, jobs, cell_timeout)
        try:
            for result in tqdm(results, total=len(todo), desc="mara bench", unit="cell", disable=not progress):
                if result["error"] is None:
                    write_json(cell_path(out, _cell_of(todo, result)), result)
                    finished[result["key"]] = result
                else:
                    failures.append(result)
        except KeyboardInterrupt:
            interrupted = True
            results.close()  # stops the workers or cancels the Ray tasks
            pool.close(kill=True)
        ran = sum(1 for c in todo if finished[c.key] is not None) + len(failures)
        order = {cell.key: i for i, cell in enumerate(cells)}
        failures.sort(key=lambda f: order[f["key"]])
        done = [finished[c.key] for c in cells if finished[c.key] is not None]
        run = {"backend": "local" if ray_address is None else "ray", "jobs": jobs, "ray_address": ray_address}
        run.update(ran=ran, reused=len(cells) - len(todo), failed=len(failures), interrupted=interrupted)
        run.update(cell_timeout=cell_timeout, wall_seconds=time.perf_counter() - start, agent_env=agent_env)
        table, files = write_outputs(out, config, done, failures, run, None if interrupted else pool)
    result = BenchResult(
        out, len(cells), ran, len(cells) - len(todo), [f["error"] for f in failures], table, files,
        time.perf_counter() - start, interrupted,
    )  # fmt: skip
    if interrupted:
        raise KeyboardInterrupt(result)
    return result


def _cell_of(cells: list[Cell], result: dict) -> Cell:
    return next(c for c in cells if c.key == result["key"])


def build_agents(pool: WorkerPool, config: BenchConfig) -> dict[str, dict]:
    """Build every agent once in a worker: ``{agent: the raw_env keywords its cells use}``.

    ``ValueError`` naming the first agent that cannot be built (nothing has been run or written yet).
    """
    env = config.env_kwargs()
    tasks = [Task("probe", (agent, env, os.getcwd()), lambda why, *_: {"error": why}) for agent in config.agents]
    built = {task.payload[0]: result for task, result in pool.run(tasks)}
    for agent in config.agents:
        if "error" in built[agent]:
            raise ValueError(f"agent {agent!r} cannot be created: {built[agent]['error']}")
    return {agent: built[agent]["env"] for agent in config.agents}


def write_outputs(
    out: Path, config: BenchConfig, done: list[dict], failures: list[dict], run: dict, pool: WorkerPool | None
) -> tuple[str, list[Path]]:
    """Every output, under the folder's lock; the Gantt chart only with a ``pool`` to replay in."""
    with output_lock(out):
        table, files = write_reports(out, config, done, failures, run)
        figures = []
        if have_matplotlib():
            for name in FIGURES.values():  # no stale figures from an earlier run
                (out / name).unlink(missing_ok=True)
            if done:
                figures = write_charts(out, config, done)
                if pool is not None:
                    figures += _gantt(pool, out, done[0])
        files.append(write_markdown(out, config, table, failures, figures))
    return table, files + figures


def _gantt(pool: WorkerPool, out: Path, done_cell: dict) -> list[Path]:
    """Replay the first finished cell's first seed in a worker (the agent's code runs there)."""
    path = out / FIGURES["gantt"]
    task = Task("gantt", (done_cell, str(path), os.getcwd()), lambda why, *_: {"error": why})
    for _, result in pool.run([task]):
        if "error" in result:
            print(f"mara bench: no Gantt chart: {result['error']}", flush=True)
            return []
    return [path]
