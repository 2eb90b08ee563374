"""Build curve banks: ``python -m mara_env.workloads.build NAME [NAME ...] [--size full|tiny] [--out DIR] [--install]``.

Each bank has a builder module ``mara_env.workloads.builders.NAME`` with

- ``LOSS``: one sentence defining the recorded loss;
- ``grid(size) -> list[dict]``: the run configurations (JSON-serialisable, each with a unique
  stable ``key``, a ``family`` and a ``seed``); ``size`` is ``"full"`` or ``"tiny"`` (CI);
- ``run(config) -> dict``: trains once and returns ``steps`` and ``losses`` (1-D arrays, steps
  increasing and evenly spaced, losses finite and > 0) and ``x_unit``.

The driver runs every configuration not yet done, saving each finished curve under
``PATH.partial/`` so that an interrupted build resumes where it stopped, then packs the bank into
``PATH`` (compressed; see :mod:`mara_env.workloads.bank`). ``PATH`` is ``DIR/NAME.npz`` with ``DIR``
the folder the user names (default ``runs/banks``); the shipped banks under
``mara_env/workloads/data`` are replaced only with ``--install``. Builds are seeded and reproducible up to
floating-point differences between machines.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import shutil
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from mara_env.workloads.bank import BANK_DIR, CurveBank, save_bank, validate_curves

BUILDERS = ("vision", "rl", "charlm", "wordlm", "shapes", "seq", "tabular", "gbt", "autoenc")
DEFAULT_OUT = Path("runs") / "banks"
_TEST_BUILDERS = ("_toy",)  # instant builder for the driver's own tests


def _builder(name: str):
    if name not in BUILDERS + _TEST_BUILDERS:
        raise ValueError(f"bank must be one of {BUILDERS}, got {name!r}")
    return importlib.import_module(f"mara_env.workloads.builders.{name}")


def _partial_file(partial: Path, key: str) -> Path:
    return partial / (hashlib.sha1(key.encode()).hexdigest()[:16] + ".npz")


def _run_one(name: str, config: dict) -> dict:
    start = time.perf_counter()
    result = _builder(name).run(config)
    result["wall_time"] = time.perf_counter() - start
    return result


def _save_partial(path: Path, config: dict, result: dict) -> None:
    meta = {
        "key": config["key"],
        "family": config["family"],
        "seed": config["seed"],
        "config": config,
        "wall_time": round(float(result["wall_time"]), 3),
        "x_unit": result["x_unit"],
    }
    steps, losses = np.asarray(result["steps"], float), np.asarray(result["losses"], float)
    validate_curves([steps], [losses], [meta], where=f"run {config['key']}")
    tmp = path.with_suffix(".tmp.npz")
    np.savez(tmp, steps=steps, losses=losses, meta=np.array(json.dumps(meta)))
    tmp.replace(path)  # atomic: an interrupted write never leaves a half curve behind


def build(name: str, size: str = "full", out: Path | None = None, workers: int = 1, progress: bool = True) -> Path:
    """Run (or resume) every configuration of bank ``name`` and pack the bank into the file ``out``
    (default ``runs/banks/NAME.npz``; never the shipped file unless the caller passes its path)."""
    builder = _builder(name)
    out = Path(out) if out else DEFAULT_OUT / f"{name}.npz"
    partial = out.with_name(out.name + ".partial")
    partial.mkdir(parents=True, exist_ok=True)
    configs = builder.grid(size)
    todo = [c for c in configs if not _partial_file(partial, c["key"]).exists()]
    bar = tqdm(total=len(configs), initial=len(configs) - len(todo), desc=f"bank {name}", disable=not progress)
    if workers > 1:
        with ProcessPoolExecutor(workers) as pool:
            futures = {pool.submit(_run_one, name, c): c for c in todo}
            for future in as_completed(futures):
                config = futures[future]
                _save_partial(_partial_file(partial, config["key"]), config, future.result())
                bar.update()
    else:
        for config in todo:
            _save_partial(_partial_file(partial, config["key"]), config, _run_one(name, config))
            bar.update()
    bar.close()
    bank = _pack(name, builder, configs, partial, size)
    save_bank(bank, out)
    shutil.rmtree(partial)
    return out


def _pack(name: str, builder, configs: Sequence[dict], partial: Path, size: str) -> CurveBank:
    steps, losses, meta = [], [], []
    for config in configs:
        with np.load(_partial_file(partial, config["key"]), allow_pickle=False) as data:
            steps.append(data["steps"])
            losses.append(data["losses"])
            meta.append(json.loads(str(data["meta"])))
    info = {
        "loss": builder.LOSS,
        "size": size,
        "command": f"python -m mara_env.workloads.build {name} --size {size} --install",
        "curves": len(configs),
        "total_wall_time_s": round(sum(m["wall_time"] for m in meta), 1),
    }
    return CurveBank(name, steps, losses, meta, info)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m mara_env.workloads.build",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("names", nargs="+", choices=BUILDERS, metavar="NAME", help=f"banks to build: {BUILDERS}")
    parser.add_argument("--size", choices=("full", "tiny"), default="full", help="full grid, or a tiny one for CI")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output folder (default runs/banks)")
    where.add_argument("--install", action="store_true", help="write over the shipped banks in the package")
    parser.add_argument("--workers", type=int, default=1, help="parallel processes (default 1)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    args = parser.parse_args(argv)
    folder = BANK_DIR if args.install else args.out
    for name in args.names:
        start = time.perf_counter()
        path = build(name, args.size, folder / f"{name}.npz", args.workers, progress=not args.quiet)
        print(f"wrote {path} in {time.perf_counter() - start:.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
