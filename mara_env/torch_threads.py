"""Torch's thread count for one block of work, restored afterwards.

``torch.set_num_threads`` is process-wide. Library objects never leave it changed: they run their
torch work inside :func:`torch_threads`, and entry points (the CLI, bench workers, the trainer) choose
a count for their own process.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def torch_threads(count: int | None) -> Iterator[None]:
    """Run the block with ``count`` torch threads (``None``: as they are), then restore the previous count."""
    if count is None:
        yield
        return
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ValueError(f"threads must be None or an integer >= 1, got {count!r}")
    import torch

    previous = torch.get_num_threads()
    if previous != count:
        torch.set_num_threads(count)
    try:
        yield
    finally:
        if torch.get_num_threads() != previous:
            torch.set_num_threads(previous)
