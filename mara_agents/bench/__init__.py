"""``mara bench``: a resumable grid of schedulers x workloads x loads x seeds, with tables and figures.

A *cell* is one agent on one workload at one load, over all the seeds. Cells run in worker processes
(:mod:`~mara_agents.bench.pool`, also with one job), so nothing an agent does ends the bench: an
exception, ``SystemExit``, ``os._exit``, a crash or a hang past the cell timeout fails that cell only.
The backends (local workers, or Ray tasks) map the same cell runner, so the same seeds give the same
numbers on both. Each finished cell is saved under ``out/cells/`` as soon as it finishes; a rerun with
the same config reuses it (after checking it) and retries failed cells, and the outputs are rebuilt
from all the grid's cells on every run.

Modules: :mod:`.config` (the grid), :mod:`.cells` (cells and their files), :mod:`.worker` and
:mod:`.pool` (worker processes), :mod:`.backends` (local, Ray), :mod:`.report` and :mod:`.summary`
(tables, CSV/JSON/markdown), :mod:`.figures`, :mod:`.run` (:func:`run_bench`), :mod:`.cli` (the
``mara bench`` subcommand and the options it shares with ``mara compare``).
"""

from mara_agents.bench.backends import LOCAL_RAY
from mara_agents.bench.cells import Cell, failed_cell, load_value, read_cell
from mara_agents.bench.config import ENV_DEFAULTS, BenchConfig, offered_load
from mara_agents.bench.files import write_json
from mara_agents.bench.report import cell_records, format_results, versions
from mara_agents.bench.run import DEFAULT_CELL_TIMEOUT, BenchResult, default_jobs, run_bench
from mara_agents.bench.worker import run_cell
from mara_agents.registry import load_agent

__all__ = [
    "DEFAULT_CELL_TIMEOUT",
    "ENV_DEFAULTS",
    "LOCAL_RAY",
    "BenchConfig",
    "BenchResult",
    "Cell",
    "cell_records",
    "default_jobs",
    "failed_cell",
    "format_results",
    "load_agent",
    "load_value",
    "offered_load",
    "read_cell",
    "run_bench",
    "run_cell",
    "versions",
    "write_json",
]
