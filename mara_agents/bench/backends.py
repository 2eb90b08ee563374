"""Where cells run: a local pool of worker processes, or Ray tasks (each guarding its cell the same way)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from mara_agents.bench.cells import Cell, error_record, failed_cell
from mara_agents.bench.pool import Task, WorkerPool, run_one

LOCAL_RAY = "local"  # ``--ray`` without an address: start a local Ray instance


def cell_task(cell: Cell) -> Task:
    """The worker task that plays ``cell``; if its worker hangs or dies, the cell fails saying where."""
    return Task("cell", cell, lambda why, seed, slot: failed_cell(cell, error_record(cell, why, seed, slot)))


def map_local(pool: WorkerPool, cells: Sequence[Cell]) -> Iterator[dict]:
    """The results of ``cells`` as they finish on ``pool``'s workers."""
    for _, result in pool.run(cell_task(cell) for cell in cells):
        yield result


def guarded_cell(cell: Cell, timeout: float | None) -> dict:
    """Play ``cell`` in a fresh local worker within ``timeout``: what a Ray task runs."""
    return run_one(cell_task(cell), timeout)


def map_ray(cells: Sequence[Cell], address: str, jobs: int, timeout: float | None) -> Iterator[dict]:
    """``cells`` as Ray tasks; uses a running Ray, else starts one and shuts it down after.

    ``address`` is :data:`LOCAL_RAY` for a new local instance with ``jobs`` CPUs, or a cluster address
    for ``ray.init(address=...)`` (the agents' modules must import on its workers). Each Ray task
    plays its cell in a worker process of its own (:func:`guarded_cell`), so timeouts, exceptions and
    exits are handled exactly as locally. On Ctrl-C the pending tasks are cancelled.
    """
    import ray

    started = not ray.is_initialized()
    if started and address == LOCAL_RAY:
        ray.init(num_cpus=jobs, include_dashboard=False)
    elif started:
        ray.init(address=address)
    refs: dict = {}
    try:
        task = ray.remote(num_cpus=1, max_retries=0)(guarded_cell)
        refs = {task.remote(cell, timeout): cell for cell in cells}
        pending = list(refs)
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            try:
                yield ray.get(done[0])
            except Exception as err:  # the Ray worker itself died
                cell = refs[done[0]]
                yield failed_cell(cell, error_record(cell, f"the Ray task failed: {type(err).__name__}: {err}"))
            refs.pop(done[0])
    finally:
        for ref in refs:  # interrupted: stop what still runs
            ray.cancel(ref, force=True)
        if started:
            ray.shutdown()
