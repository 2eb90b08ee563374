"""A training run's log: one CSV row per PPO iteration, and TensorBoard scalars where it is installed."""

from __future__ import annotations

import csv
from pathlib import Path


def tensorboard_writer(out: Path):
    """A TensorBoard writer into ``out/tensorboard``, or ``None`` where TensorBoard is not installed."""
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError:  # TensorBoard is optional; the CSV log is always written
        return None
    return SummaryWriter(str(out / "tensorboard"))


def log_row(path: Path, row: dict, writer) -> None:
    """Append one iteration's ``row`` to the CSV log at ``path`` (a header first) and to ``writer`` if any."""
    new = not path.exists()
    with path.open("a", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(row))
        if new:
            w.writeheader()
        w.writerow(row)
    if writer is not None:
        for key, value in row.items():
            if key != "iteration":
                writer.add_scalar(key, value, row["turns"])
