"""Load a repository script (``benchmarks/``, ``examples/``) as a module, for tests of its functions, or
run it in this process as its command line would."""

from __future__ import annotations

import importlib.util
import io
import runpy
import subprocess
import sys
import traceback
from contextlib import chdir, redirect_stderr, redirect_stdout
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]


def load_script(relative: str) -> ModuleType:
    """The script at ``ROOT / relative``, executed as a fresh module. Its folder is on ``sys.path``
    while it loads, as when it runs (the benchmarks import their siblings)."""
    path = ROOT / relative
    folder = str(path.parent)
    sys.path.insert(0, folder)
    try:
        spec = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(folder)
    return module


def run_script(command: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess:
    """Run ``[python,] SCRIPT, *ARGS`` in this process, as ``python SCRIPT ARGS`` would, and return what
    ``subprocess.run(command, capture_output=True, text=True)`` would: the exit status, stdout and stderr.

    A script's start-up (torch, the project) costs seconds as a process; ``test_script_help`` starts each one
    for real, so the tests of their options and refusals run them here. The script's folder is first on
    ``sys.path`` while it runs (in ``cwd`` if given), and ``sys.argv``, ``sys.path`` and the working directory
    are put back after."""
    args = command[1:] if command[0] == sys.executable else command
    script, saved_argv, saved_path = str(args[0]), sys.argv, list(sys.path)
    stdout, stderr = io.StringIO(), io.StringIO()
    sys.argv, sys.path[0:0] = [script, *map(str, args[1:])], [str((Path(cwd or ".") / script).resolve().parent)]
    try:
        with chdir(cwd or Path.cwd()), redirect_stdout(stdout), redirect_stderr(stderr):
            returncode = _exit_status(script, stderr)
    finally:
        sys.argv, sys.path[:] = saved_argv, saved_path
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
