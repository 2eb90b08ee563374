"""The torch slot actor's answer for one observation: what the numpy actor's tests compare against."""

from __future__ import annotations

import numpy as np
import torch

from mara_agents.mara.slot_network import SlotEncoding, SlotMARANet


def torch_turn(net: SlotMARANet, vector: np.ndarray, mask: np.ndarray) -> tuple[SlotEncoding, np.ndarray]:
    """``net``'s slot encoding of one observation ``vector`` and its masked logits there (no gradients)."""
    batch = torch.as_tensor(vector)[None]
    with torch.no_grad():
        encoding = net.encode(batch)
        return encoding, net.turn_logits(encoding, batch, torch.as_tensor(mask)[None])[0].numpy()
