"""The MARA policy as a ``Scheduler``: one shared network, node after node."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from mara_agents.base import EnvRequirements
from mara_agents.mara.checkpoint import load_checkpoint
from mara_agents.mara.network import MARANet
from mara_env.torch_threads import torch_threads

SHIPPED_CHECKPOINT = Path(__file__).parent / "weights" / "mara.pt"


class MARAScheduler:
    """Acts with a MARA network on the PettingZoo observation.

    Parameters
    ----------
    checkpoint:
        Path of a checkpoint (weights-only), or a ``MARANet`` already in memory.
    deterministic:
        Play the most likely allowed action (default; it scored 0.759 against 0.749 sampled on 20
        validation seeds) or sample.
    threads:
        Torch threads for each decision (default 1: one observation gains nothing from more, and
        schedulers in parallel processes would contend for the cores); set around the decision and
        restored after it, so the process's own setting is untouched. ``None`` uses torch's setting.
    trained_env:
        For a network in memory: the env settings it was trained on (a checkpoint carries its own).
    """

    def __init__(
        self,
        checkpoint: str | Path | MARANet,
        deterministic: bool = True,
        seed: int | None = 0,
        threads: int | None = 1,
        trained_env: dict | None = None,
    ) -> None:
        if isinstance(checkpoint, MARANet):
            self.net, env = checkpoint, dict(trained_env or {})
        else:
            self.net, env, _ = load_checkpoint(Path(checkpoint))
        # the observation the network learned on: the runner must build the same one
        trained = {**env, "history_window": self.net.config["history_window"]}
        self.requirements = EnvRequirements.trained_on(trained)
        self.threads = threads
        self.deterministic = deterministic
        self.reset(seed)

    def reset(self, seed: int | None = None) -> None:
        self.generator = torch.Generator().manual_seed(0 if seed is None else int(seed))

    def act(self, observation: dict, agent: str) -> int:
        vector = np.asarray(observation["observation"], dtype=np.float32)
        mask = np.asarray(observation["action_mask"], dtype=np.float32)
        with torch_threads(self.threads), torch.inference_mode():
            logits = self.net.logits(torch.as_tensor(vector)[None], torch.as_tensor(mask)[None])[0]
            if self.deterministic:
                return int(torch.argmax(logits))
            probs = torch.softmax(logits, dim=0)
            return int(torch.multinomial(probs, 1, generator=self.generator))
