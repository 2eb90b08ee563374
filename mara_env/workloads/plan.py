"""What an arrival process hands the episode generator."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class ArrivalPlan(NamedTuple):
    """Arrival slot of every task (sorted), with the deadline (-1: draw it) and need (nan: draw it).

    ``dropped`` counts source rows (of a trace) left out because they fall at or after the horizon.
    """

    slots: np.ndarray
    deadlines: np.ndarray
    needs: np.ndarray
    dropped: int = 0
