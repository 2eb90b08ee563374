"""SHA-256 digests of the weights shipped in the packages, checked before they are loaded.

The manifest (``mara_env/weights_manifest.json``, shipped with the package) lists every shipped
weights file by its path relative to the directory holding ``mara_env`` and ``mara_agents``, with its
size and SHA-256 digest. :func:`verify_if_shipped` (called by
:func:`mara_env.safe_load.load_tensor_file`) refuses a shipped file whose bytes differ from the
manifest (one flipped byte is enough), or one the manifest does not list. Files outside the shipped
weight folders (your own checkpoints) are not in the manifest and are not checked here.

After retraining a shipped file on purpose, regenerate the manifest::

    python -m mara_env.integrity --write

and ``python -m mara_env.integrity`` checks every shipped file (exit status 1 on a mismatch).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent  # holds mara_env/ and mara_agents/
MANIFEST = Path(__file__).resolve().parent / "weights_manifest.json"
# Folders whose weights ship in the packages (relative to ROOT), and the files they hold.
SHIPPED_DIRS = ("mara_env/forecast/weights", "mara_agents/mara/weights")
SHIPPED_PATTERN = "*.pt"
REGENERATE = "python -m mara_env.integrity --write"

_digests: dict[tuple[str, int, int], str] = {}


def sha256(path: Path) -> str:
    """Hex SHA-256 of the file's bytes (cached per path, size and modification time)."""
    stat = path.stat()
    key = (str(path), stat.st_size, stat.st_mtime_ns)
    if key not in _digests:
        digest = hashlib.sha256()
        with path.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
        _digests[key] = digest.hexdigest()
    return _digests[key]


def shipped_files() -> list[Path]:
    """Every weights file in the shipped folders, sorted."""
    return sorted(p for d in SHIPPED_DIRS for p in (ROOT / d).glob(SHIPPED_PATTERN) if p.is_file())


def shipped_name(path: str | Path) -> str | None:
    """The manifest key of ``path`` if it lies in a shipped weights folder, else ``None``."""
    resolved = Path(path).resolve()
    for folder in SHIPPED_DIRS:
        if resolved.parent == (ROOT / folder).resolve():
            return f"{folder}/{resolved.name}"
    return None


def read_manifest(manifest: Path | None = None) -> dict[str, dict]:
    """``{name: {"sha256", "bytes"}}``; ``ValueError`` if the manifest is missing or malformed."""
    manifest = manifest or MANIFEST
    try:
        data = json.loads(manifest.read_text())
    except (OSError, ValueError) as err:
        raise ValueError(f"weights manifest {manifest} is missing or unreadable ({err}); run `{REGENERATE}`") from err
    files = data.get("files") if isinstance(data, dict) else None
    if not isinstance(files, dict) or not all(
        isinstance(v, dict) and isinstance(v.get("sha256"), str) and isinstance(v.get("bytes"), int)
        for v in files.values()
    ):
        raise ValueError(f"weights manifest {manifest} is malformed; run `{REGENERATE}`")
    return files


def write_manifest(manifest: Path | None = None) -> dict[str, dict]:
    """Record the digests of every shipped weights file (after retraining one on purpose)."""
    manifest = manifest or MANIFEST
    files = {p.relative_to(ROOT).as_posix(): {"sha256": sha256(p), "bytes": p.stat().st_size} for p in shipped_files()}
    text = json.dumps({"algorithm": "sha256", "files": files}, indent=2, sort_keys=True) + "\n"
    manifest.write_text(text)
    return files


def verify_if_shipped(path: str | Path, manifest: Path | None = None) -> bool:
    """Check a shipped weights file against the manifest; ``True`` if checked, ``False`` if not shipped.

    ``ValueError`` naming the file if the manifest does not list it or its digest differs.
    """
    name = shipped_name(path)
    if name is None:
        return False
    manifest = manifest or MANIFEST
    entry = read_manifest(manifest).get(name)
    if entry is None:
        raise ValueError(f"shipped weights {path} are not in the manifest {manifest}; run `{REGENERATE}`")
    actual = sha256(Path(path).resolve())
    if actual != entry["sha256"]:
        raise ValueError(
            f"shipped weights {path} do not match their SHA-256 digest in {manifest} (expected "
            f"{entry['sha256'][:16]}..., got {actual[:16]}...): the file was modified or corrupted; reinstall "
            f"the package, or if you replaced it on purpose run `{REGENERATE}`"
        )
    return True


def check_all(manifest: Path | None = None) -> list[str]:
    """Problems with the shipped files against the manifest (empty when all match)."""
    listed = read_manifest(manifest)
    problems = []
    present = {p.relative_to(ROOT).as_posix(): p for p in shipped_files()}
    for path in present.values():
        try:
            verify_if_shipped(path, manifest)
        except ValueError as err:
            problems.append(str(err))
    problems += [f"{name} is in the manifest but not installed" for name in sorted(set(listed) - set(present))]
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Check (default) or rewrite the shipped weights' SHA-256 manifest.")
    parser.add_argument("--write", action="store_true", help="record the digests of the files as they are now")
    args = parser.parse_args(argv)
    if args.write:
        for name, entry in write_manifest().items():
            print(f"{entry['sha256']}  {name} ({entry['bytes']} bytes)")
        print(f"wrote {MANIFEST}")
        return 0
    problems = check_all()
    for problem in problems:
        print(problem, file=sys.stderr)
    if not problems:
        print(f"all {len(shipped_files())} shipped weights files match {MANIFEST.name}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
