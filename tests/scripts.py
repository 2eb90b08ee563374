"""Load a repository script (``benchmarks/``, ``examples/``) as a module, for tests of its functions, or
run it in this process as its command line would."""

from __future__ import annotations

import importlib.util
import io
import runpy
import subprocess
import sys
import traceback
from collections.abc import Iterator
from contextlib import chdir, contextmanager, redirect_stderr, redirect_stdout
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]


def load_script(relative: str) -> ModuleType:
    """The script at ``ROOT / relative``, executed as a fresh module. Its folder is on ``sys.path``
    while it loads, as when it runs (the benchmarks import their siblings)."""
    path = ROOT / relative
    with _folder_first_on_path(path):
        spec = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    return module


@contextmanager
def _folder_first_on_path(script: Path) -> Iterator[None]:
    """``script``'s folder first on ``sys.path``, as when it runs; ``sys.path`` as it was after (some
    scripts add to it themselves)."""
    saved = list(sys.path)
    sys.path.insert(0, str(script.resolve().parent))
    try:
        yield
    finally:
        sys.path[:] = saved


def run_script(command: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess:
    """Run ``[python,] SCRIPT, *ARGS`` in this process, as ``python SCRIPT ARGS`` would, and return what
    ``subprocess.run(command, capture_output=True, text=True)`` would: the exit status, stdout and stderr.

    A script's start-up (torch, the project) costs seconds as a process; ``test_script_help`` starts each one
    for real, so the tests of their options and refusals run them here. The script's folder is first on
    ``sys.path`` while it runs (in ``cwd`` if given), and ``sys.argv``, ``sys.path`` and the working directory
    are put back after."""
    args = command[1:] if command[0] == sys.executable else command
    script, saved_argv = str(args[0]), sys.argv
    stdout, stderr = io.StringIO(), io.StringIO()
    sys.argv = [script, *map(str, args[1:])]
    try:
        with (
            _folder_first_on_path(Path(cwd or ".") / script),
            chdir(cwd or Path.cwd()),
            redirect_stdout(stdout),
            redirect_stderr(stderr),
        ):
            returncode = _exit_status(script, stderr)
    finally:
        sys.argv = saved_argv
    return subprocess.CompletedProcess(command, returncode, stdout.getvalue(), stderr.getvalue())


def _exit_status(script: str, stderr: io.StringIO) -> int:
    """Run ``script`` as ``__main__`` and return the status Python would exit with, writing to ``stderr``
    what Python would print: a ``SystemExit``'s message, or an uncaught exception's traceback."""
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as done:
        if done.code is None or isinstance(done.code, int):
            return done.code or 0
        print(done.code, file=stderr)
        return 1
    except Exception:  # as the interpreter does: print the traceback, exit 1
        traceback.print_exc(file=stderr)
        return 1
    return 0
