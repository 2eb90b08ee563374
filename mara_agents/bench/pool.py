"""A pool of bench worker processes with per-task timeouts; a worker that dies or hangs is replaced.

Every task runs in a worker (:mod:`mara_agents.bench.worker`), also with one job, so that nothing an
agent does (raise ``SystemExit``, call ``os._exit``, crash, hang) reaches the bench: the task fails,
with the seed and slot the worker last reported, and a fresh worker takes the next task.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from pathlib import Path

import mara_agents

# A worker plays one cell at a time and ``--jobs`` says how many run at once, so each worker's
# numerical libraries get one thread: numpy's OpenBLAS otherwise starts a thread per core in every
# worker, and two workers on two cores played a 64-node MARA episode in 38 s instead of 10 s.
# A variable the user has set is passed on unchanged.
ONE_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")

START_SECONDS = 300.0  # a worker that is not ready by then (imports hang) is a broken install, not a bad agent
CLOSE_SECONDS = 2.0
PACKAGE_ROOT = str(Path(mara_agents.__file__).resolve().parents[1])  # workers import this very code

PARENT_POLL_SECONDS = 0.2
# The worker's first lines: watch the parent before the (slow) imports, so a bench killed with
# ``kill -9`` at any moment leaves no worker behind; then serve tasks with this very package's code.
BOOT = """
import os, sys, threading, time
def watch():
    while os.getppid() == {parent}:
        time.sleep({poll})
    os._exit(70)
if os.getppid() != {parent}:
    os._exit(70)
threading.Thread(target=watch, daemon=True).start()
sys.path.insert(0, {root!r})
from mara_agents.bench.worker import main
main({fd})
"""

# fail(message, seed, slot) -> the task's result when its worker hung or died
Fail = Callable[[str, int | None, int | None], dict]


@dataclass
class Task:
    """What a worker runs: ``kind`` (``cell``, ``probe``, ``gantt``) and its ``payload``; ``fail`` builds
    the result of a task whose worker hung or died."""

    kind: str
    payload: object
    fail: Fail
    seed: int | None = field(default=None, init=False)
    slot: int | None = field(default=None, init=False)


def worker_environment(parent: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The environment of a worker process: ``parent``'s, with each of :data:`ONE_THREAD_VARIABLES`
    that ``parent`` does not set set to ``"1"``."""
    return {**{name: "1" for name in ONE_THREAD_VARIABLES}, **parent}


class _Worker:
    def __init__(self) -> None:
        ours, theirs = socket.socketpair()
        code = BOOT.format(parent=os.getpid(), poll=PARENT_POLL_SECONDS, root=PACKAGE_ROOT, fd=theirs.fileno())
        self.proc = subprocess.Popen(
            [sys.executable, "-c", code],
            pass_fds=(theirs.fileno(),),
            stdin=subprocess.DEVNULL,
            env=worker_environment(),
            start_new_session=True,  # the terminal's Ctrl-C goes to the bench only
        )
        theirs.close()
        self.conn = Connection(ours.detach())
        self.ready = False
        self.started = time.monotonic()
        self.task: Task | None = None
        self.task_id = 0

    def send(self, task: Task) -> None:
        self.task_id += 1
        self.task, self.started = task, time.monotonic()
        self.conn.send((self.task_id, task.kind, task.payload))

    def kill(self) -> None:
        """Kill the worker and anything it started (its own session's process group)."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError, AttributeError):
            self.proc.kill()

    def stop(self, wait_seconds: float = CLOSE_SECONDS) -> None:
        """Close the socket (the worker exits at its next read) and kill it if it does not."""
        self.conn.close()
        try:
            self.proc.wait(wait_seconds)
        except subprocess.TimeoutExpired:
            self.kill()
            self.proc.wait()

    def exit_reason(self) -> str:
        try:
            code = self.proc.wait(CLOSE_SECONDS)
        except subprocess.TimeoutExpired:
            self.kill()
            self.proc.wait()
            return "its worker stopped answering and was killed"
        if code < 0:
            name = signal.Signals(-code).name if -code in signal.valid_signals() else str(-code)
            why = " (out of memory?)" if -code == signal.SIGKILL else ""
            return f"its worker process was killed by signal {name}{why}"
        return f"its worker process exited with code {code} (the agent ended its process, or a crash)"


class WorkerPool:
    """``size`` worker processes; :meth:`run` maps tasks over them, each within ``timeout`` seconds."""

    def __init__(self, size: int, timeout: float | None) -> None:
        self.size, self.timeout = size, timeout
        self.workers: list[_Worker] = []

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close(kill=exc[0] is not None)

    def close(self, kill: bool = False) -> None:
        """Stop every worker (at once with ``kill``: a cell in progress is abandoned)."""
        for worker in self.workers:
            if kill:
                worker.kill()
            worker.stop(0.0 if kill else CLOSE_SECONDS)
        self.workers = []

    def run(self, tasks: Iterable[Task]) -> Iterator[tuple[Task, dict]]:
        """``(task, result)`` as tasks finish; a task whose worker hangs or dies gets ``task.fail(...)``."""
        queue = deque(tasks)
        while len(self.workers) < min(self.size, len(queue)):
            self.workers.append(_Worker())
        while queue or any(w.task is not None for w in self.workers):
            for worker in self.workers:
                if worker.ready and worker.task is None and queue:
                    worker.send(queue.popleft())
            yield from self._wait_once(queue)

    def _wait_once(self, queue: deque) -> Iterator[tuple[Task, dict]]:
        """Read what the workers said within the nearest deadline; handle deaths and timeouts."""
        ready = wait([w.conn for w in self.workers], self._next_deadline())
        for worker in list(self.workers):
            if worker.conn in ready:
                try:
                    message = worker.conn.recv()
                except (EOFError, OSError):
                    yield from self._replace(worker, queue, worker.exit_reason())
                    continue
                yield from self._handle(worker, message)
        now = time.monotonic()
        for worker in list(self.workers):
            if not worker.ready and now - worker.started > START_SECONDS:
                self.close(kill=True)
                raise RuntimeError(f"a bench worker did not start within {START_SECONDS:.0f} s")
            if worker.task is not None and self.timeout is not None and now - worker.started > self.timeout:
                worker.kill()
                why = f"timed out after {self.timeout:g} s (cell timeout); its worker was stopped and replaced"
                yield from self._replace(worker, queue, why)

    def _next_deadline(self) -> float:
        """Seconds until the nearest timeout (at most 1 s, to notice workers that died silently)."""
        now, nearest = time.monotonic(), 1.0
        for worker in self.workers:
            if worker.task is not None and self.timeout is not None:
                nearest = min(nearest, worker.started + self.timeout - now)
        return max(nearest, 0.0)

    def _handle(self, worker: _Worker, message: tuple) -> Iterator[tuple[Task, dict]]:
        kind, task_id = message[0], message[1]
        if kind == "ready":
            worker.ready = True
        elif task_id == worker.task_id and worker.task is not None:
            if kind == "progress":
                worker.task.seed, worker.task.slot = message[2], message[3]
            elif kind == "done":
                task, worker.task = worker.task, None
                yield task, message[2]

    def _replace(self, worker: _Worker, queue: deque, why: str) -> Iterator[tuple[Task, dict]]:
        task = worker.task
        worker.stop(0.0)
        self.workers.remove(worker)
        if task is None and not worker.ready:
            self.close(kill=True)
            raise RuntimeError(f"a bench worker could not start: {why}")
        if queue:
            self.workers.append(_Worker())
        if task is not None:
            yield task, task.fail(why, task.seed, task.slot)


def run_one(task: Task, timeout: float | None) -> dict:
    """Run one task in a fresh worker and return its result (as the Ray backend does per cell)."""
    with WorkerPool(1, timeout) as pool:
        for _, result in pool.run([task]):
            return result
    raise RuntimeError("the worker pool returned no result")  # pragma: no cover
