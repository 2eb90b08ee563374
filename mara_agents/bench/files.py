"""Files the bench writes: atomically, through unique temporary files, under a lock for the outputs."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

try:  # POSIX; elsewhere two benches on one folder still never leave a torn file, only interleaved sets
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None


def write_atomic(path: Path, write: Callable[[IO], None], binary: bool = False) -> None:
    """Call ``write(file)`` on a new temporary file beside ``path``, then rename it onto ``path``.

    The temporary file is created with a unique name by :func:`tempfile.mkstemp` (exclusively: a file
    or link planted there is never followed), in the target's folder so the rename is atomic; a
    reader sees the old file or the new one, never half of one. A symlink at ``path`` itself is
    replaced, not written through.
    """
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb" if binary else "w", **({} if binary else {"encoding": "utf-8", "newline": ""})) as fh:
            write(fh)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_text(path: Path, text: str) -> None:
    """``text`` into ``path`` atomically."""
    write_atomic(path, lambda fh: fh.write(text))


def write_json(path: Path, data: object) -> None:
    """``data`` as JSON into ``path`` atomically (a killed run never leaves half a file)."""
    write_text(path, json.dumps(data, indent=1))


@contextlib.contextmanager
def output_lock(out: Path) -> Iterator[None]:
    """Hold an exclusive lock on the folder ``out`` itself (no lock file is left in it): two benches on one
    folder write their outputs one after the other."""
    if fcntl is None:  # pragma: no cover
        yield
        return
    fd = os.open(out, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock
