"""The flow forecaster's network and its safe weights file (torch only here)."""

from __future__ import annotations

import math
from pathlib import Path

import torch
from torch import nn

from mara_env.forecast.flow import CONDITION_SIZE, FORMAT, GRID
from mara_env.safe_load import load_tensor_file

TIME_FEATURES = 16


def time_embedding(t: torch.Tensor) -> torch.Tensor:
    """Sinusoidal features of the flow time ``t`` in ``[0, 1]`` (shape ``(n, 1)`` -> ``(n, 16)``)."""
    freqs = torch.exp(torch.linspace(0.0, math.log(100.0), TIME_FEATURES // 2))
    angles = 2.0 * math.pi * t * freqs
    return torch.cat([torch.sin(angles), torch.cos(angles)], dim=1)


class FlowNet(nn.Module):
    """Prefix encoder and velocity field ``v(x_t, t | prefix)``.

    The first layer of the field is split by input (trajectory, time, prefix) so that the prefix's
    share is computed once per task and the time's once per Euler step, not once per sample.
    """

    def __init__(self, hidden: int = 96, embed: int = 64) -> None:
        super().__init__()
        self.config = {"hidden": hidden, "embed": embed, "grid": GRID, "condition": CONDITION_SIZE}
        self.encoder = nn.Sequential(
            nn.Linear(CONDITION_SIZE, embed), nn.SiLU(), nn.Linear(embed, embed), nn.SiLU(), nn.Linear(embed, embed)
        )
        self.from_prefix = nn.Linear(embed, hidden, bias=False)
        self.from_time = nn.Linear(TIME_FEATURES, hidden, bias=False)
        self.from_x = nn.Linear(GRID, hidden)
        self.field = nn.Sequential(nn.SiLU(), nn.Linear(hidden, hidden), nn.SiLU(), nn.Linear(hidden, GRID))

    def condition(self, prefix: torch.Tensor) -> torch.Tensor:
        """The prefix's contribution to the field's first layer, ``(n, hidden)``."""
        return self.from_prefix(self.encoder(prefix))

    def velocity(self, x: torch.Tensor, t: torch.Tensor, condition: torch.Tensor) -> torch.Tensor:
        """``v(x_t, t | prefix)``; ``t`` is ``(n, 1)`` or ``(1, 1)`` (one time for the whole batch)."""
        return self.field(self.from_x(x) + self.from_time(time_embedding(t)) + condition)

    @torch.inference_mode()
    def integrate(self, x: torch.Tensor, condition: torch.Tensor, steps: int) -> torch.Tensor:
        """Euler-integrate ``dx/dt = v`` from ``t = 0`` to 1 in place (the sampler's hot loop).

        Same arithmetic as :meth:`velocity`, with the time terms computed once for all steps and
        the layers applied directly to skip per-call module overhead.
        """
        dt = 1.0 / steps
        times = torch.arange(steps, dtype=torch.float32)[:, None] * dt
        time_terms = self.from_time(time_embedding(times)) + self.from_x.bias
        w_x, (w_1, b_1), (w_2, b_2) = self.from_x.weight, self._hidden(1), self._hidden(3)
        for i in range(steps):
            h = torch.addmm(condition + time_terms[i], x, w_x.t())
            h = torch.addmm(b_1, torch.nn.functional.silu(h, inplace=True), w_1.t())
            v = torch.addmm(b_2, torch.nn.functional.silu(h, inplace=True), w_2.t())
            x.add_(v, alpha=dt)
        return x

    def _hidden(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        layer = self.field[index]
        return layer.weight, layer.bias


def save_flow_net(net: FlowNet, path: Path, extra: dict | None = None) -> None:
    """Write weights and config as plain tensors and numbers (loadable with ``weights_only=True``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"format": FORMAT, "config": net.config, "state_dict": net.state_dict(), "extra": extra or {}}, path)


def load_flow_net(path: Path) -> FlowNet:
    """Load a weights file safely; ``ValueError`` if it is missing, corrupt or does not fit the model."""
    blob = load_tensor_file(
        path, FORMAT, "flow forecaster weights", "train them with `python -m mara_env.forecast.train`"
    )
    config = blob.get("config", {})
    if config.get("grid") != GRID or config.get("condition") != CONDITION_SIZE:
        raise ValueError(
            f"flow forecaster weights at {path} were trained for grid={config.get('grid')}, "
            f"condition={config.get('condition')}; this version needs grid={GRID}, condition={CONDITION_SIZE}"
        )
    net = FlowNet(hidden=int(config["hidden"]), embed=int(config["embed"]))
    try:
        net.load_state_dict(blob["state_dict"])
    except (RuntimeError, KeyError) as err:
        raise ValueError(f"flow forecaster weights at {path} do not match the model: {err}") from err
    net.eval()
    net.extra = blob.get("extra", {})
    net.calibration = net.extra.get("calibration")  # None for weights saved before it existed
    return net
