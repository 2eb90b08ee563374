"""MARA policy checkpoints: tensors and plain values only, loaded with ``weights_only=True``.

Before any layer is built, a checkpoint's configuration must lie within :data:`CONFIG_BOUNDS` and
its tensors must have exactly the names and shapes that configuration gives (compared against the
network built on PyTorch's ``meta`` device, which allocates no memory). A crafted file asking for
100,000 layers is refused at once. Shipped weights are checked against their SHA-256 digest and
non-finite tensors are refused by :func:`mara_env.safe_load.load_tensor_file`.
"""

from __future__ import annotations

from pathlib import Path

import torch

from mara_agents.mara.network import MARANet
from mara_agents.mara.slot_network import SlotMARANet
from mara_env.config import MAX_HISTORY_WINDOW
from mara_env.safe_load import check_state_dict, load_tensor_file

FORMAT = "mara-policy-v1"
# Inclusive ranges of the integer settings of a MARANet a checkpoint may ask for.
CONFIG_BOUNDS = {"history_window": (1, MAX_HISTORY_WINDOW), "width": (4, 1024), "layers": (1, 16), "heads": (1, 32)}
MAX_PARAMETERS = 50_000_000
# Boolean settings and their values in checkpoints written before they existed.
FLAGS = {
    "autoregressive": True,
    "planner_hints": False,
    "pick_hints": False,
    "uniform_pick": False,
    "selector": False,
    "size_context": False,
    "load_signal": False,
    "load_scale": False,
    "gate_context": False,
    "gate_rule": False,
    "gate_rule_big": False,
    "split_gate": False,
}
# settings of the slot actor only
SLOT_FLAGS = ("planner_hints", "pick_hints", "uniform_pick", "selector", "size_context", "load_signal", "load_scale",
              "gate_context", "gate_rule", "gate_rule_big", "split_gate")  # fmt: skip
# The actor architectures, by the config's "architecture" (absent in checkpoints of the joint actor).
ARCHITECTURES: dict[str, type[MARANet] | type[SlotMARANet]] = {"joint": MARANet, "slot": SlotMARANet}


def save_checkpoint(net: MARANet | SlotMARANet, path: Path, env_kwargs: dict, extra: dict | None = None) -> Path:
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


def check_config(config: object, path: Path) -> dict:
    """The checkpoint's network config if every setting is known and within bounds; ``ValueError`` otherwise."""
    where = f"MARA checkpoint {path}"
    if not isinstance(config, dict):
        raise ValueError(f"{where}: config must be a dict, got {type(config).__name__}")
    allowed = {*CONFIG_BOUNDS, *FLAGS, "architecture"}
    if not set(CONFIG_BOUNDS) <= set(config) <= allowed:
        raise ValueError(
            f"{where}: config must have the keys {sorted(CONFIG_BOUNDS)} and optionally {sorted(FLAGS)} and "
            f"'architecture', got {sorted(config)}"
        )
    config = {**FLAGS, **config}  # checkpoints from before a flag existed
    if config.get("architecture", "joint") not in ARCHITECTURES:
        raise ValueError(
            f"{where}: config architecture must be one of {sorted(ARCHITECTURES)}, got {config['architecture']!r}"
        )
    for key, (low, high) in CONFIG_BOUNDS.items():
        value = config[key]
        if not (isinstance(value, int) and not isinstance(value, bool) and low <= value <= high):
            raise ValueError(f"{where}: config {key} must be an integer in [{low}, {high}], got {value!r}")
    if config["width"] % config["heads"]:
        raise ValueError(f"{where}: config width ({config['width']}) must be a multiple of heads ({config['heads']})")
    for flag in FLAGS:
        if not isinstance(config[flag], bool):
            raise ValueError(f"{where}: config {flag} must be True or False, got {config[flag]!r}")
    for flag in SLOT_FLAGS:
        if config[flag] and config.get("architecture", "joint") != "slot":
            raise ValueError(f"{where}: {flag} is a setting of the slot actor only (architecture 'slot')")
    return config


def build(config: dict) -> MARANet | SlotMARANet:
    """The network a checked config describes (its ``architecture``, the joint actor by default)."""
    architecture = config.get("architecture", "joint")
    dropped = {"architecture"} if architecture == "slot" else {"architecture", *SLOT_FLAGS}
    settings = {k: v for k, v in config.items() if k not in dropped}
    return ARCHITECTURES[architecture](**settings)


def check_shapes(state_dict: object, config: dict, path: Path) -> None:
    """``ValueError`` unless ``state_dict`` holds exactly the tensors ``config`` gives, shape for shape."""
    check_state_dict(state_dict, lambda: build(config), f"MARA checkpoint {path}", MAX_PARAMETERS)


def load_checkpoint(path: Path) -> tuple[MARANet | SlotMARANet, dict, dict]:
    """``(net, env settings, extra)``; ``ValueError`` for a missing, corrupt, foreign or mismatched file."""
    blob = load_tensor_file(path, FORMAT, "MARA checkpoint", "train one with examples/train_mara.py")
    config = check_config(blob.get("config"), Path(path))
    check_shapes(blob.get("state_dict"), config, Path(path))
    env, extra = blob.get("env", {}), blob.get("extra", {})
    if not isinstance(env, dict) or not isinstance(extra, dict):
        raise ValueError(f"MARA checkpoint {path}: 'env' and 'extra' must be dicts")
    net = build(config)
    try:
        net.load_state_dict(blob["state_dict"])
    except (TypeError, KeyError, RuntimeError) as err:
        raise ValueError(f"MARA checkpoint {path} does not match the network: {err}") from err
    net.eval()
    return net, env, extra
