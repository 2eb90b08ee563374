"""Offline text for the language-model banks: a fixed list of Python standard-library source files.

The text is whatever the running interpreter ships (``sysconfig``'s ``stdlib`` folder), so it is
available offline; different Python versions give slightly different text, hence slightly different
curves (the shipped banks record the version in their configurations).
"""

from __future__ import annotations

import functools
import re
import sys
import sysconfig
from pathlib import Path

import numpy as np

FILES = (
    "argparse.py",
    "collections/__init__.py",
    "configparser.py",
    "csv.py",
    "dataclasses.py",
    "difflib.py",
    "enum.py",
    "functools.py",
    "heapq.py",
    "inspect.py",
    "pathlib.py",
    "shutil.py",
    "statistics.py",
    "string.py",
    "textwrap.py",
    "typing.py",
)
CHARS = "\n" + "".join(chr(c) for c in range(32, 127))  # other characters read as "?"
PYTHON = f"{sys.version_info.major}.{sys.version_info.minor}"
VAL_SHARE = 0.1


@functools.lru_cache(maxsize=1)
def corpus() -> str:
    """The concatenated source files (missing ones skipped)."""
    root = Path(sysconfig.get_paths()["stdlib"])
    parts = [(root / name).read_text(encoding="utf-8", errors="replace") for name in FILES if (root / name).is_file()]
    if not parts:
        raise RuntimeError(f"no standard-library sources found under {root}")
    return "\n".join(parts)


@functools.lru_cache(maxsize=1)
def char_ids() -> tuple[np.ndarray, np.ndarray]:
    """``(train, val)`` int64 character ids (vocabulary :data:`CHARS`); val is the last 10%."""
    lookup = {c: i for i, c in enumerate(CHARS)}
    unknown = lookup["?"]
    ids = np.array([lookup.get(c, unknown) for c in corpus()], dtype=np.int64)
    cut = int(len(ids) * (1.0 - VAL_SHARE))
    return ids[:cut], ids[cut:]


@functools.lru_cache(maxsize=4)
def word_ids(vocab: int) -> tuple[np.ndarray, np.ndarray]:
    """``(train, val)`` word ids: identifiers, numbers and single symbols; the ``vocab - 1`` most frequent
    training tokens keep their own id (ties by first appearance), every other token is id 0."""
    tokens = re.findall(r"[A-Za-z_]+|\d+|\S", corpus())
    cut = int(len(tokens) * (1.0 - VAL_SHARE))
    counts: dict[str, int] = {}
    for t in tokens[:cut]:
        counts[t] = counts.get(t, 0) + 1
    kept = sorted(counts, key=lambda t: -counts[t])[: vocab - 1]
    lookup = {t: i + 1 for i, t in enumerate(kept)}
    ids = np.array([lookup.get(t, 0) for t in tokens], dtype=np.int64)
    return ids[:cut], ids[cut:]


def windows(ids: np.ndarray, starts, length: int):
    """Input and next-token target windows ``(len(starts), length)`` as torch tensors."""
    import torch

    index = np.asarray(starts)[:, None] + np.arange(length + 1)
    chunk = torch.from_numpy(ids[index])
    return chunk[:, :-1], chunk[:, 1:]
