"""The worker process: plays cells (and other agent code) for the bench, so nothing an agent does ends it.

Started by :class:`mara_agents.bench.pool.WorkerPool` as ``python -c ...`` (not ``multiprocessing``:
the caller's ``__main__`` is never re-imported, so a script calling ``run_bench`` needs no
``if __name__ == "__main__"`` guard). It talks to the parent over one socket (pickled messages):

- parent -> worker: ``(task_id, kind, payload)``;
- worker -> parent: ``("progress", task_id, seed, slot)`` whenever the slot changes, then
  ``("done", task_id, result)``.

The worker ignores SIGINT (the user's Ctrl-C is the parent's business; a ``KeyboardInterrupt`` raised
by an agent fails its task) and exits as soon as its parent is gone (a thread watches the parent's pid),
so ``kill -9`` of the bench leaves no worker behind (see :data:`mara_agents.bench.pool.BOOT`).
"""

from __future__ import annotations

import signal
import socket
import sys
import time
import traceback
from collections.abc import Callable
from multiprocessing.connection import Connection

from mara_agents.bench.cells import Cell, cell_env, error_record, failed_cell
from mara_agents.evaluation import env_config, play_episode
from mara_agents.registry import load_agent
from mara_env.env import raw_env

Report = Callable[[int, int], None]


class _Tracked:
    """A scheduler that reports (seed, slot) to the parent whenever the slot changes; acts the same."""

    def __init__(self, scheduler: object, env: raw_env, report: Report) -> None:
        self.scheduler, self.env, self.report = scheduler, env, report
        self.seed, self.slot = None, -1

    def reset(self, seed: int | None = None) -> None:
        self.seed, self.slot = seed, -1
        self.scheduler.reset(seed)

    def act(self, observation: dict, agent: str) -> int:
        slot = self.env.sim.slot
        if slot != self.slot:
            self.slot = slot
            self.report(self.seed, slot)
        return self.scheduler.act(observation, agent)


def run_cell(cell: Cell, report: Report | None = None) -> dict:
    """Play every seed of ``cell`` and return its result; never raises, not even ``BaseException``.

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
        env = raw_env(**env_config(scheduler, cell_env(cell.env_kwargs, cell.workload, cell.load)))
        player = _Tracked(scheduler, env, report) if report is not None else scheduler
        for seed in cell.seeds:
            records.append({**cell.labels(), **play_episode(env, player, seed)})
    except BaseException as err:  # an agent's SystemExit or KeyboardInterrupt fails its cell only
        return failed_cell(cell, _episode_error(cell, env, seed, err), time.perf_counter() - start)
    wall = time.perf_counter() - start
    return {"cell": cell.spec(), "key": cell.key, "records": records, "wall_seconds": wall, "error": None}


def _episode_error(cell: Cell, env: raw_env | None, seed: int | None, err: BaseException) -> dict:
    """The error record of a failed cell: where (seed, slot, node) and what."""
    sim = getattr(env, "sim", None) if seed is not None else None
    slot = sim.slot if sim is not None else None
    node = env.agent_selection if slot is not None else None
    what = f"{type(err).__name__}: {err}"
    tb = "".join(traceback.format_exception(type(err), err, err.__traceback__))
    return error_record(cell, what, seed, slot, node=node, traceback=tb)


def probe_agent(agent: str, env_kwargs: dict, search_path: str) -> dict:
    """Build ``agent`` once: ``{"env": its raw_env keywords}`` or ``{"error": why}``; never raises."""
    try:
        return {"env": env_config(load_agent(agent, search_path), env_kwargs)}
    except BaseException as err:
        return {"error": f"{type(err).__name__}: {err}"}


def draw_gantt(done_cell: dict, path: str, search_path: str) -> dict:
    """Draw the Gantt figure of a finished cell into ``path``: ``{}`` or ``{"error": why}``."""
    from mara_agents.bench.figures import plot_gantt

    try:
        plot_gantt(done_cell, path, search_path)
        return {}
    except BaseException as err:
        return {"error": f"{type(err).__name__}: {err}"}


def _reporter(conn: Connection, task_id: int) -> Report:
    return lambda seed, slot: conn.send(("progress", task_id, seed, slot))


def serve(conn: Connection) -> None:
    """Answer tasks until the parent closes the socket."""
    conn.send(("ready", 0))
    while True:
        try:
            task_id, kind, payload = conn.recv()
        except (EOFError, OSError):
            return
        if kind == "cell":
            result = run_cell(payload, _reporter(conn, task_id))
        elif kind == "probe":
            result = probe_agent(*payload)
        elif kind == "gantt":
            result = draw_gantt(*payload)
        else:
            result = {"error": f"unknown task kind {kind!r}"}
        try:
            conn.send(("done", task_id, result))
        except OSError:  # the parent is gone: nothing to answer to
            return


def main(fd: int) -> None:
    """The worker's entry point (after :data:`mara_agents.bench.pool.BOOT` started watching the parent)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    conn = Connection(socket.socket(fileno=fd).detach())
    sys.stdin.close()
    serve(conn)
