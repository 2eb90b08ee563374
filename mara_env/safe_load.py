"""Loading saved weights without unpickling arbitrary objects, and refusing damaged ones.

Every weights file of the project (forecaster weights, MARA checkpoints, SB3 policies) is a dict of
tensors and plain values with a ``format`` tag, read here with ``torch.load(weights_only=True)``.
Before a file is used:

- a shipped file (in the packages' weights folders) must match its SHA-256 digest in the manifest
  (:mod:`mara_env.integrity`), so one flipped byte is caught;
- every floating-point tensor in it must be finite (no NaN or infinity, whatever the file).

Loaders then check their own configuration and shapes (e.g. :mod:`mara_agents.mara.checkpoint`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any


def non_finite_tensors(blob: object, prefix: str = "") -> list[str]:
    """Names (dotted paths) of the floating-point tensors in ``blob`` holding NaN or infinity."""
    import torch

    if isinstance(blob, torch.Tensor):
        bad = (blob.is_floating_point() or blob.is_complex()) and not bool(torch.isfinite(blob).all())
        return [prefix or "<tensor>"] if bad else []
    if isinstance(blob, dict):
        items = blob.items()
    elif isinstance(blob, (list, tuple)):
        items = enumerate(blob)
    else:
        return []
    found: list[str] = []
    for key, value in items:
        found += non_finite_tensors(value, f"{prefix}.{key}" if prefix else str(key))
    return found


def load_tensor_file(path: str | Path, expected_format: str, label: str, how_to_make: str = "") -> dict:
    """The dict stored at ``path``; ``ValueError`` naming ``label`` if it is missing, corrupt or foreign.

    Parameters
    ----------
    expected_format:
        The ``format`` tag the file must carry.
    label:
        What the file is, for messages (e.g. ``"MARA checkpoint"``).
    how_to_make:
        Appended to the "does not exist" message (e.g. ``"train one with ..."``).
    """
    import torch

    from mara_env.integrity import verify_if_shipped

    path = Path(path)
    if path.is_dir():
        raise ValueError(f"{label} {path} is a directory, not a file")
    if not path.is_file():
        raise ValueError(f"{label} {path} does not exist" + (f"; {how_to_make}" if how_to_make else ""))
    verify_if_shipped(path)
    try:
        blob = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # torch raises several types for truncated, foreign or object-carrying files
        raise ValueError(f"{label} {path} is corrupt or not a {label}: {err}") from err
    if not isinstance(blob, dict) or blob.get("format") != expected_format:
        raise ValueError(f"{label} {path} is not in format {expected_format!r}")
    bad = non_finite_tensors(blob)
    if bad:
        shown = ", ".join(bad[:5]) + (f" and {len(bad) - 5} more" if len(bad) > 5 else "")
        raise ValueError(f"{label} {path} holds non-finite values (NaN or infinity) in {shown}")
    return blob


def check_state_dict(
    state_dict: object, build: Callable[[], Any], where: str, max_parameters: int = 50_000_000
) -> None:
    """``ValueError`` (prefixed by ``where``) unless ``state_dict`` holds exactly the tensors ``build()``'s
    module has, shape for shape.

    ``build`` runs on PyTorch's ``meta`` device, so nothing is allocated: bound the configuration it
    reads first (a module of 100,000 layers still takes time to construct, even without memory).
    """
    import torch

    if not isinstance(state_dict, dict) or not all(
        isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in state_dict.items()
    ):
        raise ValueError(f"{where}: state_dict must map names to tensors")
    if sum(v.numel() for v in state_dict.values()) > max_parameters:
        raise ValueError(f"{where}: more than {max_parameters:,} parameters")
    with torch.device("meta"):  # shapes only
        expected = {k: tuple(v.shape) for k, v in build().state_dict().items()}
    missing, unexpected = sorted(set(expected) - set(state_dict)), sorted(set(state_dict) - set(expected))
    if missing or unexpected:
        raise ValueError(
            f"{where}: tensors do not match its config: missing {missing[:5]}, unexpected {unexpected[:5]}"
        )
    wrong = [
        f"{k} {tuple(v.shape)} (expected {expected[k]})" for k, v in state_dict.items() if tuple(v.shape) != expected[k]
    ]
    if wrong:
        raise ValueError(f"{where}: tensor shapes do not match its config: {', '.join(wrong[:5])}")
