"""``mara bench``: a resumable grid of schedulers x workloads x loads x seeds, with tables and figures.

A *cell* is one agent on one workload at one load, over all the seeds. :func:`run_cell` plays a cell
and never raises: it returns the records or the error. The backends (a local process pool, or Ray)
only map it over the cells left to run, so the same seeds give the same numbers on both. Each finished
cell is saved under ``out/cells/`` as soon as it finishes; a rerun with the same config reuses it and
retries failed cells, and the outputs are rebuilt from all the grid's cells on every run.
"""

from __future__ import annotations

import csv
import functools
import hashlib
import importlib
import importlib.util
import json
import math
import multiprocessing
import os
import platform
import re
import sys
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path

from tqdm.auto import tqdm

from mara_agents.base import Scheduler
from mara_agents.evaluation import env_config, play_episode
from mara_agents.registry import SCHEDULERS, make
from mara_agents.stats import summarize
from mara_env.env import raw_env
from mara_env.workloads import LOAD_PRESETS, WORKLOADS, resolve_load

TABLE_METRICS = ("completion_rate", "wasted_work", "utilisation", "switches_per_task")
VERSION_PACKAGES = ("numpy", "torch", "gymnasium", "pettingzoo", "mara")
FIGURES = {
    "bars": "completion_by_workload_load.png",
    "lines": "completion_vs_load.png",
    "gantt": "gantt.png",
}
LOCAL_RAY = "local"  # ``--ray`` without an address: start a local Ray instance


# ---------------------------------------------------------------------------------------- config
@dataclass(frozen=True)
class BenchConfig:
    """The grid to run: every agent on every workload at every load, over the same seeds.

    Parameters
    ----------
    agents:
        Registered scheduler names (``mara_agents.SCHEDULERS``) or ``module:attr`` import paths, where
        ``attr`` is a class or function that returns a scheduler when called with no arguments.
    workloads:
        Workload names (``mara_env.workloads.WORKLOADS``).
    loads:
        Load presets (``mara_env.workloads.LOAD_PRESETS``) or offered loads as numbers > 0.
    seeds:
        Episodes per cell, >= 1.
    seed_start:
        First seed; a cell plays seeds ``seed_start .. seed_start + seeds - 1``.
    num_nodes, max_tasks, horizon:
        Environment size (``mara_env.raw_env``).
    """

    agents: tuple[str, ...]
    workloads: tuple[str, ...] = ("synthetic",)
    loads: tuple[str, ...] = tuple(LOAD_PRESETS)
    seeds: int = 20
    seed_start: int = 0
    num_nodes: int = 8
    max_tasks: int = 16
    horizon: int = 300

    def __post_init__(self) -> None:
        for name in ("agents", "workloads", "loads"):  # lists and numeric loads welcome: stored as text
            values = getattr(self, name)
            values = (values,) if isinstance(values, str) else values
            object.__setattr__(self, name, tuple(str(v) for v in values))

    @property
    def seed_list(self) -> list[int]:
        """The episode seeds of every cell."""
        return list(range(self.seed_start, self.seed_start + self.seeds))

    def env_kwargs(self) -> dict:
        """The ``raw_env`` keywords shared by every cell (the workload and load are per cell)."""
        return {"num_nodes": self.num_nodes, "max_tasks": self.max_tasks, "horizon": self.horizon}

    def cells(self, search_path: str = "") -> list[Cell]:
        """The grid in order: agent, then workload, then load."""
        return [
            Cell(agent, workload, load, tuple(self.seed_list), self.env_kwargs(), search_path)
            for agent in self.agents
            for workload in self.workloads
            for load in self.loads
        ]

    def validate(self) -> None:
        """``ValueError`` naming the first bad value and what is allowed.

        Agents are not checked here: a bad agent fails its own cells in :func:`run_bench`, not the run.
        """
        for name in ("seeds", "num_nodes", "max_tasks", "horizon"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        if isinstance(self.seed_start, bool) or not isinstance(self.seed_start, int) or self.seed_start < 0:
            raise ValueError(f"seed_start must be an integer >= 0, got {self.seed_start!r}")
        for name in ("agents", "workloads", "loads"):
            values = getattr(self, name)
            if not values or len(set(values)) != len(values):
                raise ValueError(f"{name} must be a non-empty list without repeats, got {list(values)}")
        for workload in self.workloads:
            if workload not in WORKLOADS:
                raise ValueError(f"unknown workload {workload!r}: workloads must be among {sorted(WORKLOADS)}")
        for load in self.loads:
            offered_load(load)
        for workload in self.workloads:  # the env's own checks: sizes, a missing curve bank
            raw_env(**self.env_kwargs(), workload=workload, forecaster="none", curve_split="test")


def offered_load(label: str) -> float:
    """The offered load of a preset name or a number given as text; ``ValueError`` otherwise."""
    try:
        return resolve_load(load_value(label))
    except ValueError:
        raise ValueError(
            f"unknown load {label!r}: loads must be presets among {sorted(LOAD_PRESETS)} or numbers > 0"
        ) from None


def load_value(label: str) -> str | float:
    """What ``raw_env(load=...)`` takes for a load label: the preset name, or the number."""
    if label in LOAD_PRESETS:
        return label
    try:
        return float(label)
    except ValueError:
        return label


# ---------------------------------------------------------------------------------------- agents
def load_agent(spec: str, search_path: str = "") -> Scheduler:
    """A new scheduler from a registered name or a ``module:attr`` path.

    Parameters
    ----------
    spec:
        A name of ``mara_agents.SCHEDULERS``, or ``package.module:attr`` where ``attr`` (dots allowed,
        ``Outer.Inner``) is called with no arguments and must return an object with ``reset(seed)``
        and ``act(observation, agent)``.
    search_path:
        A folder put first on ``sys.path`` before importing (``mara bench`` passes the directory it
        was started in, as ``python -m`` does), so ``examples.custom_scheduler:CappedEDF`` imports
        from the repository root in every worker.

    Raises
    ------
    ValueError
        The name is unknown, the module does not import, or the attribute is missing.
    TypeError
        The attribute is not callable or does not return a scheduler.
    """
    if ":" not in spec:
        if spec not in SCHEDULERS:
            raise ValueError(f"unknown scheduler; use one of {sorted(SCHEDULERS)} or a module:Class path")
        return make(spec)
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise ValueError("expected module:Class, e.g. examples.custom_scheduler:CappedEDF")
    if search_path and search_path not in sys.path:
        sys.path.insert(0, search_path)
    try:
        module = importlib.import_module(module_name)
    except Exception as err:
        raise ValueError(f"cannot import module {module_name!r} ({type(err).__name__}: {err})") from err
    try:
        factory = functools.reduce(getattr, attr.split("."), module)
    except AttributeError:
        raise ValueError(f"module {module_name!r} has no attribute {attr!r}") from None
    if not callable(factory):
        raise TypeError(f"{attr!r} in {module_name!r} is not a class or function")
    scheduler = factory()
    if not isinstance(scheduler, Scheduler):
        raise TypeError(f"{attr}() returned a {type(scheduler).__name__}, without reset(seed) and act(obs, agent)")
    return scheduler


def check_agents(config: BenchConfig, search_path: str = "") -> tuple[dict[str, dict], dict[str, str]]:
    """Create every agent of ``config`` once, here.

    Returns ``({agent: env settings}, {agent: error})``: the ``raw_env`` keywords each agent's cells
    use (with its forecaster and the test split) and, for each agent that cannot be created, why; the
    cells of those agents are recorded as failed without being run.
    """
    settings, errors = {}, {}
    for agent in config.agents:
        try:
            settings[agent] = env_config(load_agent(agent, search_path), config.env_kwargs())
        except Exception as err:
            errors[agent] = (
                f"agent {agent!r} cannot be created, so its cells were not run (workloads "
                f"{list(config.workloads)} x loads {list(config.loads)}): {type(err).__name__}: {err}"
            )
    return settings, errors


# ---------------------------------------------------------------------------------------- cells
@dataclass(frozen=True)
class Cell:
    """One agent on one workload at one load, over ``seeds``; picklable, so any backend can run it."""

    agent: str
    workload: str
    load: str
    seeds: tuple[int, ...]
    env_kwargs: dict = field(hash=False)
    search_path: str = field(default="", compare=False)

    def spec(self) -> dict:
        """What the results depend on (not where the agent's module was found)."""
        return {
            "agent": self.agent,
            "workload": self.workload,
            "load": self.load,
            "seeds": list(self.seeds),
            "env": self.env_kwargs,
        }

    @property
    def key(self) -> str:
        """A digest of :meth:`spec`: a saved cell is reused only by a run that asks for the same."""
        return hashlib.sha256(json.dumps(self.spec(), sort_keys=True).encode()).hexdigest()[:12]

    @property
    def file_name(self) -> str:
        """``cells/<agent>__<workload>__<load>__<key>.json`` with unsafe characters as ``_``."""
        safe = [re.sub(r"[^A-Za-z0-9_.-]", "_", part) for part in (self.agent, self.workload, self.load)]
        return "__".join([*safe, self.key]) + ".json"

    def where(self) -> str:
        """``agent 'a', workload 'w', load 'l'`` for messages."""
        return f"agent {self.agent!r}, workload {self.workload!r}, load {self.load!r}"


def run_cell(cell: Cell) -> dict:
    """Play every seed of ``cell`` and return its result; never raises.

    Returns
    -------
    dict
        ``cell`` (its spec), ``key``, ``records`` (per episode: ``agent``, ``workload``, ``load`` and
        the record of :func:`mara_agents.play_episode`), ``wall_seconds`` and ``error``: ``None``, or a
        dict with ``message`` (naming the agent, workload, load, seed, slot and node), ``seed``,
        ``slot``, ``node`` and ``traceback``. The first failing seed ends the cell.
    """
    start = time.perf_counter()
    env, seed, records = None, None, []
    try:
        scheduler = load_agent(cell.agent, cell.search_path)
        env = raw_env(**env_config(scheduler, {**cell.env_kwargs, **_cell_env(cell)}))
        for seed in cell.seeds:
            labels = {"agent": cell.agent, "workload": cell.workload, "load": cell.load}
            records.append({**labels, **play_episode(env, scheduler, seed)})
        error = None
    except Exception as err:
        error = _episode_error(cell, env, seed, err)
        records = []
    wall = time.perf_counter() - start
    return {"cell": cell.spec(), "key": cell.key, "records": records, "wall_seconds": wall, "error": error}


def _cell_env(cell: Cell) -> dict:
    return {"workload": cell.workload, "load": load_value(cell.load)}


def _episode_error(cell: Cell, env: raw_env | None, seed: int | None, err: BaseException) -> dict:
    """The error record of a failed cell: where (seed, slot, node) and what."""
    slot = env.sim.slot if env is not None and seed is not None and env.sim is not None else None
    node = env.agent_selection if slot is not None else None
    where = cell.where()
    if seed is not None:
        where += f", seed {seed}, slot {slot}, {node}"
    return {
        "message": f"{where}: {type(err).__name__}: {err}",
        "seed": seed,
        "slot": slot,
        "node": node,
        "traceback": "".join(traceback.format_exception(type(err), err, err.__traceback__)),
    }


def failed_cell(cell: Cell, message: str) -> dict:
    """A cell result for a cell that could not run at all (bad agent, dead worker); ``message`` says why."""
    error = {"message": message, "seed": None, "slot": None, "node": None, "traceback": ""}
    return {"cell": cell.spec(), "key": cell.key, "records": [], "wall_seconds": 0.0, "error": error}


# ---------------------------------------------------------------------------------------- backends
Runner = Callable[[Cell], dict]


def map_local(run: Runner, cells: Sequence[Cell], jobs: int) -> Iterator[dict]:
    """``run`` over ``cells`` in a pool of ``jobs`` processes (in this process when ``jobs`` is 1).

    A worker that dies (a crash in native code, out of memory) breaks the pool and every cell in it;
    those cells are then rerun one by one, each in its own process, so only the culprit fails.
    """
    if jobs == 1 or not cells:
        yield from map(run, cells)
        return
    orphans = []
    for cell, result in _in_pool(run, cells, jobs):
        if result is None:
            orphans.append(cell)
        else:
            yield result
    for orphan in orphans:
        for cell, result in _in_pool(run, [orphan], 1):
            yield result or failed_cell(cell, f"{cell.where()}: its worker process died (a crash or out of memory)")


def _in_pool(run: Runner, cells: Sequence[Cell], jobs: int) -> Iterator[tuple[Cell, dict | None]]:
    """``(cell, result)`` as the cells finish in a new pool; ``None`` for the cells of a broken pool."""
    # "spawn": fresh workers, safe whatever threads this process runs (Ray, torch); agents import via search_path
    pool = ProcessPoolExecutor(min(jobs, len(cells)), mp_context=multiprocessing.get_context("spawn"))
    try:
        futures: dict[Future, Cell] = {pool.submit(run, cell): cell for cell in cells}
        for future in as_completed(futures):
            try:
                yield futures[future], future.result()
            except BrokenProcessPool:
                yield futures[future], None
            except Exception as err:
                yield futures[future], failed_cell(futures[future], _worker_failed(futures[future], err))
    finally:
        pool.shutdown(cancel_futures=True)


def map_ray(run: Runner, cells: Sequence[Cell], address: str, jobs: int) -> Iterator[dict]:
    """``run`` over ``cells`` as Ray tasks; uses a running Ray, else starts one and shuts it down after.

    ``address`` is :data:`LOCAL_RAY` for a new local instance with ``jobs`` CPUs, or a cluster address
    for ``ray.init(address=...)`` (the agents' modules must import on its workers).
    """
    import ray

    started = not ray.is_initialized()
    if started and address == LOCAL_RAY:
        ray.init(num_cpus=jobs, include_dashboard=False)
    elif started:
        ray.init(address=address)
    try:
        task = ray.remote(num_cpus=1)(run)
        refs = {task.remote(cell): cell for cell in cells}
        pending = list(refs)
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            try:
                yield ray.get(done[0])
            except Exception as err:  # the worker died (after Ray's own retries)
                yield failed_cell(refs[done[0]], _worker_failed(refs[done[0]], err))
    finally:
        if started:
            ray.shutdown()


def _worker_failed(cell: Cell, err: BaseException) -> str:
    return f"{cell.where()}: the worker failed: {type(err).__name__}: {err}"


# ---------------------------------------------------------------------------------------- the run
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


def run_bench(
    config: BenchConfig,
    out: str | Path,
    jobs: int | None = None,
    ray_address: str | None = None,
    progress: bool = True,
) -> BenchResult:
    """Run the cells of ``config`` not already saved in ``out``, then write every output.

    Parameters
    ----------
    config:
        The grid; :meth:`BenchConfig.validate` runs first and raises ``ValueError`` before any work.
    out:
        Output folder: ``cells/`` (one JSON per finished cell), ``results.json``, ``results.csv``,
        ``results.md``, ``config.json``, ``failures.json`` and the PNG figures.
    jobs:
        Worker processes (default ``min(2, cpu count)``); with Ray, the CPUs of a new local instance.
    ray_address:
        ``None`` for the local process pool; :data:`LOCAL_RAY` or a cluster address for Ray.
    progress:
        Show a progress bar over the cells.
    """
    config.validate()
    jobs = default_jobs() if jobs is None else jobs
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"jobs must be an integer >= 1, got {jobs!r}")
    if ray_address is not None and importlib.util.find_spec("ray") is None:
        raise ValueError("the Ray backend needs ray, which is not installed: pip install 'mara[ray]'")
    start = time.perf_counter()
    out = Path(out)
    (out / "cells").mkdir(parents=True, exist_ok=True)
    cells = config.cells(search_path=os.getcwd())
    finished = {cell.key: read_cell(out, cell) for cell in cells}
    agent_env, bad_agents = check_agents(config, os.getcwd())
    missing = [c for c in cells if finished[c.key] is None]
    failures = [failed_cell(c, bad_agents[c.agent]) for c in missing if c.agent in bad_agents]
    todo = [c for c in missing if c.agent not in bad_agents]
    reused = sum(r is not None for r in finished.values())
    by_key = {cell.key: cell for cell in todo}
    results = map_local(run_cell, todo, jobs) if ray_address is None else map_ray(run_cell, todo, ray_address, jobs)
    for result in tqdm(results, total=len(todo), desc="mara bench", unit="cell", disable=not progress):
        if result["error"] is None:
            write_json(out / "cells" / by_key[result["key"]].file_name, result)
            finished[result["key"]] = result
        else:
            failures.append(result)
    order = {cell.key: i for i, cell in enumerate(cells)}
    failures.sort(key=lambda f: order[f["key"]])
    wall = time.perf_counter() - start
    run = {"backend": "local" if ray_address is None else "ray", "jobs": jobs, "ray_address": ray_address}
    run.update(ran=len(todo), reused=reused, failed=len(failures), wall_seconds=wall)
    done = [finished[c.key] for c in cells if finished[c.key] is not None]
    table, files = write_outputs(out, config, done, failures, {**run, "agent_env": agent_env})
    errors = [f["error"] for f in failures]
    return BenchResult(out, len(cells), len(todo), reused, errors, table, files, time.perf_counter() - start)


def default_jobs() -> int:
    """``min(2, cpu count)``: the default pool size."""
    return min(2, os.cpu_count() or 1)


def read_cell(out: Path, cell: Cell) -> dict | None:
    """The saved result of ``cell``, or ``None`` if it is missing, unreadable or from another config."""
    path = out / "cells" / cell.file_name
    try:
        saved = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    ok = saved.get("key") == cell.key and saved.get("cell") == cell.spec() and saved.get("error") is None
    return saved if ok else None


def write_json(path: Path, data: object) -> None:
    """Write ``data`` as JSON atomically (a killed run never leaves half a file)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=1))
    os.replace(tmp, path)


# ---------------------------------------------------------------------------------------- outputs
def write_outputs(out: Path, config: BenchConfig, done: list[dict], failures: list[dict], run: dict):
    """Write the raw results, config, failures, table and figures; return the table and the files.

    ``run`` describes this run (backend, counts, wall time, ``agent_env``) for ``config.json``.
    """
    records = [r for cell in done for r in cell["records"]]
    summaries = {(c["cell"]["agent"], c["cell"]["workload"], c["cell"]["load"]): summarize(c["records"]) for c in done}
    write_json(out / "results.json", records)
    write_csv(out / "results.csv", records)
    write_json(out / "failures.json", [{**f["cell"], **f["error"]} for f in failures])
    write_json(out / "config.json", config_record(config, done, run))
    figures = write_figures(out, config, summaries, done)
    table = format_results(config, summaries)
    (out / "results.md").write_text(results_markdown(config, table, failures, figures))
    files = [out / n for n in ("results.json", "results.csv", "failures.json", "config.json", "results.md")]
    return table, files + figures


def write_csv(path: Path, records: list[dict]) -> None:
    """The records as CSV, one row each, columns in first-seen order."""
    columns = list(dict.fromkeys(k for r in records for k in r)) or ["agent", "workload", "load", "seed"]
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=columns)
        writer.writeheader()
        writer.writerows(records)


def config_record(config: BenchConfig, done: list[dict], run: dict) -> dict:
    """``config.json``: the grid, the seeds, the env settings, the offered loads, versions and this run."""
    return {
        "config": asdict(config),
        "seeds": config.seed_list,
        "env_kwargs": config.env_kwargs(),
        "agent_env": run["agent_env"],
        "offered_loads": {load: offered_load(load) for load in config.loads},
        "versions": versions(),
        "compute_seconds": sum(c["wall_seconds"] for c in done),
        "run": {k: v for k, v in run.items() if k != "agent_env"} | {"finished_at": _now()},
    }


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def versions() -> dict[str, str]:
    """Python and the package versions that decide the numbers."""
    found = {"python": platform.python_version()}
    for name in VERSION_PACKAGES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = "not installed"
    return found


def format_results(config: BenchConfig, summaries: dict[tuple, dict]) -> str:
    """A markdown table: one line per agent x workload x load, ``mean ± 95% CI`` per metric."""
    names = [m.replace("_", " ") for m in TABLE_METRICS]
    lines = ["| agent | workload | load | " + " | ".join(names) + " |", "|" + "---|" * (len(names) + 3)]
    for key in ((a, w, load) for a in config.agents for w in config.workloads for load in config.loads):
        if key in summaries:
            cells = [_mean_ci(summaries[key][m]) for m in TABLE_METRICS]
        else:
            cells = ["failed"] * len(TABLE_METRICS)
        lines.append("| " + " | ".join([*key, *cells]) + " |")
    return "\n".join(lines)


def _mean_ci(stat: dict) -> str:
    return f"{stat['mean']:.3f} ± {stat['ci95']:.3f}"


def results_markdown(config: BenchConfig, table: str, failures: list[dict], figures: Sequence[Path]) -> str:
    """``results.md``: what was run, the table, the failed cells and links to the ``figures``."""
    seeds = config.seed_list
    head = (
        f"agents x workloads x loads = {len(config.agents)} x {len(config.workloads)} x {len(config.loads)} cells; "
        f"seeds {seeds[0]}..{seeds[-1]} ({len(seeds)} per cell); {config.num_nodes} nodes, "
        f"{config.max_tasks} table rows, {config.horizon} slots, test-split curves; mean ± 95% CI over seeds."
    )
    failed = [f"- {m.splitlines()[0]}" for m in dict.fromkeys(f["error"]["message"] for f in failures)] or ["none"]
    images = [f"![{path.stem.replace('_', ' ')}]({path.name})" for path in figures]
    parts = ["# mara bench", head, table, "Failed cells (retried on a rerun):", "\n".join(failed), *images]
    return "\n\n".join(parts) + "\n"


# ---------------------------------------------------------------------------------------- figures
def write_figures(out: Path, config: BenchConfig, summaries: dict[tuple, dict], done: list[dict]) -> list[Path]:
    """The PNG figures, or none (with a note on stderr) when matplotlib is not installed."""
    try:
        from matplotlib.figure import Figure  # noqa: F401  (the Agg canvas; no pyplot state)
    except ImportError:
        print("mara bench: no figures: matplotlib is not installed (pip install 'mara[plot]')", file=sys.stderr)
        return []
    paths = [out / name for name in FIGURES.values()]
    if not done:  # nothing to draw: no stale figures from an earlier run either
        for path in paths:
            path.unlink(missing_ok=True)
        return []
    plot_bars(config, summaries, paths[0])
    plot_lines(config, summaries, paths[1])
    try:  # replays an episode: the agent's own code runs here
        plot_gantt(done[0], paths[2])
    except Exception as err:
        print(f"mara bench: no Gantt chart: {type(err).__name__}: {err}", file=sys.stderr)
        return paths[:2]
    return paths


def _rates(summaries: dict, keys: Sequence[tuple]) -> tuple[list[float], list[list[float]]]:
    """Means of the completion rate and their 95% CI as error bars clipped to [0, 1] (``nan`` if failed)."""
    means, below, above = [], [], []
    for key in keys:
        stat = summaries.get(key, {}).get("completion_rate", {"mean": math.nan, "ci95": 0.0})
        mean, ci = stat["mean"], 0.0 if math.isnan(stat["ci95"]) else stat["ci95"]
        means.append(mean)
        below.append(min(ci, max(mean, 0.0)) if not math.isnan(mean) else 0.0)
        above.append(min(ci, max(1.0 - mean, 0.0)) if not math.isnan(mean) else 0.0)
    return means, [below, above]


def _plotted_agents(config: BenchConfig, summaries: dict) -> list[str]:
    """The agents with at least one finished cell, in config order."""
    return [a for a in config.agents if any(key[0] == a for key in summaries)]


def plot_bars(config: BenchConfig, summaries: dict, path: Path) -> None:
    """Completion rate per workload x load (groups) and agent (bars), with 95% CI error bars."""
    from matplotlib.figure import Figure

    groups = [(w, load) for w in config.workloads for load in config.loads]
    agents = _plotted_agents(config, summaries)
    width = 0.8 / len(agents)
    legend = 0.5 + 0.075 * max(len(a) for a in agents)
    fig = Figure(figsize=(1.0 + legend + len(groups) * max(1.0, 0.2 * len(agents)), 4.2), dpi=110, layout="constrained")
    ax = fig.subplots()
    for i, agent in enumerate(agents):
        means, errors = _rates(summaries, [(agent, w, load) for w, load in groups])
        xs = [g + (i - (len(agents) - 1) / 2) * width for g in range(len(groups))]
        ax.bar(xs, means, width, yerr=errors, capsize=2, label=agent, error_kw={"elinewidth": 0.8})
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels([f"{w}\n{load}" for w, load in groups])
    ax.set_ylabel("completion rate")
    ax.set_ylim(0, 1.0)
    ax.legend(fontsize="small", loc="center left", bbox_to_anchor=(1.01, 0.5))
    ax.set_title("Completion rate by workload and load (mean, 95% CI)")
    fig.savefig(path)


def plot_lines(config: BenchConfig, summaries: dict, path: Path) -> None:
    """Completion rate against offered load: one panel per workload, one line per agent."""
    from matplotlib.figure import Figure

    loads = sorted(config.loads, key=offered_load)
    xs = [offered_load(load) for load in loads]
    legend = 0.5 + 0.075 * max(len(a) for a in config.agents)
    fig = Figure(figsize=(4.0 * len(config.workloads) + legend + 0.8, 3.8), dpi=110, layout="constrained")
    axes = fig.subplots(1, len(config.workloads), sharey=True, squeeze=False)[0]
    for ax, workload in zip(axes, config.workloads):
        agents = _plotted_agents(config, summaries)
        for i, agent in enumerate(agents):
            means, errors = _rates(summaries, [(agent, workload, load) for load in loads])
            dodge = (i - (len(agents) - 1) / 2) * 0.012 * (max(xs) - min(xs) or 1.0)  # CIs side by side
            ax.errorbar([x + dodge for x in xs], means, yerr=errors, marker="o", ms=4, capsize=2, label=agent)
        ax.set_xticks(xs)
        ax.set_xticklabels([f"{x:g}\n{load}" if load in LOAD_PRESETS else f"{x:g}" for x, load in zip(xs, loads)])
        ax.set_xlabel("offered load")
        ax.set_title(workload)
    axes[0].set_ylabel("completion rate")
    axes[0].set_ylim(0, 1.02)
    axes[-1].legend(fontsize="small", loc="center left", bbox_to_anchor=(1.02, 0.5))
    fig.savefig(path)


def plot_gantt(done_cell: dict, path: Path) -> None:
    """The Gantt chart of the first seed of a finished cell, replayed with ``render_mode="rgb_array"``."""
    from matplotlib.figure import Figure

    from mara_env.render import GAP_PX, NODE_PX, SLOT_PX

    spec = done_cell["cell"]
    scheduler = load_agent(spec["agent"], os.getcwd())
    kwargs = {**spec["env"], "workload": spec["workload"], "load": load_value(spec["load"])}
    env = raw_env(**env_config(scheduler, {**kwargs, "render_mode": "rgb_array"}))
    record = play_episode(env, scheduler, spec["seeds"][0])
    nodes, horizon = spec["env"]["num_nodes"], spec["env"]["horizon"]
    fig = Figure(figsize=(12, 0.35 * nodes + 1.2), dpi=110, layout="constrained")
    ax = fig.subplots()
    ax.imshow(env.render(), aspect="auto", interpolation="nearest")
    ax.set_yticks([GAP_PX + i * (NODE_PX + GAP_PX) + NODE_PX / 2 for i in range(nodes)])
    ax.set_yticklabels([f"node_{i}" for i in range(nodes)])
    ticks = range(0, horizon + 1, max(10, horizon // 6 // 10 * 10))
    ax.set_xticks([t * SLOT_PX for t in ticks])
    ax.set_xticklabels([str(t) for t in ticks])
    ax.set_xlabel("slot (colour = task, light grey = idle)")
    ax.set_title(
        f"{spec['agent']}, {spec['workload']}, load {spec['load']}, seed {spec['seeds'][0]}: {record['completed']} "
        f"of {record['arrived']} tasks completed ({record['completion_rate']:.0%})"
    )
    fig.savefig(path)
