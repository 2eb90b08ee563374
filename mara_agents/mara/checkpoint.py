"""MARA policy checkpoints: tensors and plain values only, loaded with ``weights_only=True``."""

from __future__ import annotations

from pathlib import Path

import torch

from mara_agents.mara.network import MARANet
from mara_env.safe_load import load_tensor_file

FORMAT = "mara-policy-v1"


def save_checkpoint(net: MARANet, path: Path, env_kwargs: dict, extra: dict | None = None) -> Path:
    """Write the network's weights, its config, the env settings it was trained on and ``extra``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    blob = {
        "format": FORMAT,
        "config": net.config,
        "env": env_kwargs,
        "state_dict": net.state_dict(),
        "extra": extra or {},
    }
    torch.save(blob, tmp)
    tmp.replace(path)  # never leave a half-written checkpoint behind
    return path


def load_checkpoint(path: Path) -> tuple[MARANet, dict, dict]:
    """``(net, env settings, extra)``; ``ValueError`` for a missing, corrupt, foreign or mismatched file."""
    blob = load_tensor_file(path, FORMAT, "MARA checkpoint", "train one with examples/train_mara.py")
    try:
        net = MARANet(**blob["config"])
        net.load_state_dict(blob["state_dict"])
    except (TypeError, KeyError, RuntimeError) as err:
        raise ValueError(f"MARA checkpoint {path} does not match the network: {err}") from err
    net.eval()
    return net, blob.get("env", {}), blob.get("extra", {})
