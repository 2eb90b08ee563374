"""Curve banks: recorded training curves with metadata and fixed train/val/test splits.

A bank file is a compressed ``.npz`` read with ``allow_pickle=False``:

- ``steps``, ``losses``: float32, every curve's points concatenated (native x-axis, loss > 0);
- ``offsets``: int64, curve ``i`` is ``[offsets[i], offsets[i + 1])``;
- ``meta``: a JSON string, one dict per curve (``key``, ``family``, ``config``, ``seed``,
  ``wall_time``, ``x_unit``);
- ``info``: a JSON string about the bank (``name``, ``format``, ``loss``, ``command``, ...).

A curve's split is a function of its ``key`` alone (a SHA-256 hash), so it never changes when curves
are added, removed or reordered: 70% ``train``, 15% ``val``, 15% ``test``.
"""

from __future__ import annotations

import hashlib
import json
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

BANK_DIR = Path(__file__).resolve().parent / "data"
SPLITS = ("train", "val", "test")
FORMAT_VERSION = 1
_SPLIT_EDGES = (0.70, 0.85)


def split_of_key(key: str) -> str:
    """The split a curve with this key belongs to (stable across versions)."""
    u = int(hashlib.sha256(key.encode()).hexdigest()[:12], 16) / float(1 << 48)
    return "train" if u < _SPLIT_EDGES[0] else "val" if u < _SPLIT_EDGES[1] else "test"


@dataclass(frozen=True)
class CurveBank:
    """Recorded curves of one bank (or one split of it)."""

    name: str
    steps: list[np.ndarray]
    losses: list[np.ndarray]
    meta: list[dict]
    info: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.losses)

    def curve(self, index: int) -> tuple[np.ndarray, np.ndarray]:
        """``(steps, losses)`` of curve ``index``."""
        return self.steps[index], self.losses[index]

    def splits(self) -> list[str]:
        """The split of every curve."""
        return [split_of_key(m["key"]) for m in self.meta]

    def split(self, name: str) -> CurveBank:
        """The curves of split ``name`` (``train``, ``val`` or ``test``)."""
        if name not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}, got {name!r}")
        keep = [i for i, s in enumerate(self.splits()) if s == name]
        return self.subset(keep, f"{self.name}:{name}")

    def subset(self, indices: Sequence[int], name: str | None = None) -> CurveBank:
        return CurveBank(
            name or self.name,
            [self.steps[i] for i in indices],
            [self.losses[i] for i in indices],
            [self.meta[i] for i in indices],
            self.info,
        )

    def families(self) -> list[str]:
        return sorted({m["family"] for m in self.meta})


def save_bank(bank: CurveBank, path: str | Path) -> Path:
    """Write ``bank`` as a compressed ``.npz`` (validating it first)."""
    validate_curves(bank.steps, bank.losses, bank.meta)
    offsets = np.cumsum([0] + [len(v) for v in bank.losses]).astype(np.int64)
    info = {"name": bank.name, "format": FORMAT_VERSION, **bank.info}
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(
        path,
        steps=np.concatenate(bank.steps).astype(np.float32),
        losses=np.concatenate(bank.losses).astype(np.float32),
        offsets=offsets,
        meta=np.array(json.dumps(bank.meta)),
        info=np.array(json.dumps(info)),
    )
    return path


def read_bank(path: str | Path) -> CurveBank:
    """Read a bank file; ``ValueError`` naming the file if it is missing, corrupt or malformed."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"curve bank file {path} does not exist")
    try:
        with np.load(path, allow_pickle=False) as data:
            steps, losses, offsets = data["steps"], data["losses"], data["offsets"]
            meta, info = json.loads(str(data["meta"])), json.loads(str(data["info"]))
    except (OSError, KeyError, ValueError, zipfile.BadZipFile, EOFError) as err:
        raise ValueError(f"curve bank file {path} is corrupt or not a bank: {err}") from err
    if info.get("format") != FORMAT_VERSION:
        raise ValueError(f"curve bank file {path} has format {info.get('format')!r}, expected {FORMAT_VERSION}")
    if offsets.ndim != 1 or offsets[0] != 0 or offsets[-1] != losses.size or np.any(np.diff(offsets) < 2):
        raise ValueError(f"curve bank file {path} has inconsistent offsets")
    split_at = offsets[1:-1]
    bank = CurveBank(info["name"], np.split(steps, split_at), np.split(losses, split_at), meta, info)
    validate_curves(bank.steps, bank.losses, bank.meta, where=str(path))
    return bank


def validate_curves(steps: list, losses: list, meta: list, where: str = "bank") -> None:
    """Check the shipped format: aligned, >= 2 points, increasing steps, finite positive losses, keys."""
    if not (len(steps) == len(losses) == len(meta)) or not losses:
        raise ValueError(f"{where}: steps, losses and meta must be non-empty and of equal length")
    keys = set()
    for i, (x, y, m) in enumerate(zip(steps, losses, meta)):
        x, y = np.asarray(x), np.asarray(y)
        if x.shape != y.shape or x.ndim != 1 or x.size < 2:
            raise ValueError(f"{where}: curve {i} must have aligned 1-D steps and losses of >= 2 points")
        if not np.all(np.diff(x) > 0):
            raise ValueError(f"{where}: curve {i} steps must increase")
        if not (np.all(np.isfinite(y)) and np.all(y > 0)):
            raise ValueError(f"{where}: curve {i} losses must be finite and > 0")
        missing = {"key", "family"} - set(m)
        if missing:
            raise ValueError(f"{where}: curve {i} meta lacks {sorted(missing)}")
        if m["key"] in keys:
            raise ValueError(f"{where}: duplicate curve key {m['key']!r}")
        keys.add(m["key"])
