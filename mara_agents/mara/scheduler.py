"""The MARA policy as a ``Scheduler``: one shared network, node after node."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from torch import nn

from mara_agents.base import EnvRequirements
from mara_agents.mara.checkpoint import load_checkpoint
from mara_agents.mara.network import MARANet
from mara_agents.mara.numpy_actor import NumpySlotEncoder, NumpyTurnHead, SlotParts
from mara_agents.mara.slot_network import SlotMARANet
from mara_env.observation import layout_of
from mara_env.torch_threads import torch_threads

SHIPPED_CHECKPOINT = Path(__file__).parent / "weights" / "mara.pt"
# The generalist: trained over a distribution of clusters and workloads (train_mara.py --generalist).
GENERALIST_CHECKPOINT = Path(__file__).parent / "weights" / "mara_generalist.pt"
# An earlier generalist (the fifth run), shipped only as a teacher candidate of the default --generalist
# run (mara_agents.mara.teacher): it leads both planners at 4-8 nodes on vision, charlm and mixed curves.
FIFTH_GENERALIST_CHECKPOINT = Path(__file__).parent / "weights" / "mara_generalist_fifth.pt"
# Two more teacher candidates of the default --generalist run, at any cluster size: the ninth run's
# iteration 24 (the generalist shipped before this one) and the thirtieth run's iteration 12.
NINTH_GENERALIST_CHECKPOINT = Path(__file__).parent / "weights" / "mara_generalist_ninth.pt"
THIRTIETH_GENERALIST_CHECKPOINT = Path(__file__).parent / "weights" / "mara_generalist_thirtieth.pt"


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
        checkpoint: str | Path | MARANet | SlotMARANet,
        deterministic: bool = True,
        seed: int | None = 0,
        threads: int | None = 1,
        trained_env: dict | None = None,
    ) -> None:
        if isinstance(checkpoint, nn.Module):
            self.net, env = checkpoint, dict(trained_env or {})
        else:
            self.net, env, _ = load_checkpoint(Path(checkpoint))
        # the observation the network learned on: the runner must build the same one
        trained = {**env, "history_window": self.net.config["history_window"]}
        self.requirements = EnvRequirements.trained_on(trained)
        self.threads = threads
        # a slot-encoding network runs in numpy at inference (the same functions; see numpy_actor)
        slotted = isinstance(self.net, SlotMARANet)
        self._encoder = NumpySlotEncoder(self.net) if slotted else None
        self._head = NumpyTurnHead(self.net) if slotted else None
        self.deterministic = deterministic
        self.reset(seed)

    def reset(self, seed: int | None = None) -> None:
        self.generator = torch.Generator().manual_seed(0 if seed is None else int(seed))
        self._slot: tuple[np.ndarray, SlotParts] | None = None  # a slot-encoding net's current slot

    @property
    def slot_parts(self) -> SlotParts | None:
        """The current slot's shared parts (a slot-encoding network only; ``None`` before the first turn)."""
        return None if self._slot is None else self._slot[1]

    def act(self, observation: dict, agent: str) -> int:
        vector = np.asarray(observation["observation"], dtype=np.float32)
        mask = np.asarray(observation["action_mask"], dtype=np.float32)
        if self._head is not None and self.deterministic:
            return int(np.argmax(self._slot_logits(vector, mask)))  # numpy only: no torch call at all
        with torch_threads(self.threads), torch.inference_mode():
            if self._head is not None:
                logits = torch.from_numpy(self._slot_logits(vector, mask))
            else:
                logits = self.net.logits(torch.as_tensor(vector)[None], torch.as_tensor(mask)[None])[0]
            if self.deterministic:
                return int(np.argmax(logits.numpy()))
            probs = torch.softmax(logits, dim=0)
            return int(torch.multinomial(probs, 1, generator=self.generator))

    def _slot_logits(self, vector: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """A slot-encoding network's logits: the slot is encoded once, at its first node's turn."""
        layout = layout_of(vector)
        shared = layout.slot_part(vector)
        if self._slot is None or not np.array_equal(self._slot[0], shared):
            self._slot = (shared, self._encoder(vector))
        return self._head.logits(self._slot[1], vector, mask, layout)
