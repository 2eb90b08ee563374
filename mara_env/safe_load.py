"""Loading saved weights without unpickling arbitrary objects.

Every weights file of the project (forecaster weights, MARA checkpoints, SB3 policies) is a dict of
tensors and plain values with a ``format`` tag, read here with ``torch.load(weights_only=True)``.
"""

from __future__ import annotations

from pathlib import Path


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

    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{label} {path} does not exist" + (f"; {how_to_make}" if how_to_make else ""))
    try:
        blob = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # torch raises several types for truncated, foreign or object-carrying files
        raise ValueError(f"{label} {path} is corrupt or not a {label}: {err}") from err
    if not isinstance(blob, dict) or blob.get("format") != expected_format:
        raise ValueError(f"{label} {path} is not in format {expected_format!r}")
    return blob
