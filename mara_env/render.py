"""Renderings of a run: a text table of the current slot and a Gantt chart of node assignments."""

from __future__ import annotations

import numpy as np

from mara_env.core import IDLE, Simulator

SLOT_PX = 3
NODE_PX = 12
GAP_PX = 2
_IDLE_RGB = (245, 245, 245)
_DOWN_RGB = (90, 90, 90)


def ansi_table(sim: Simulator) -> str:
    """The slot, the nodes' last assignment and one line per occupied table row."""
    m = sim.metrics()
    lines = [
        f"slot {sim.slot}/{sim.config.horizon}  arrived {m['arrived']}  completed {m['completed']}  "
        f"expired {m['expired']}  queued {len(sim.queue)}",
        "nodes (last slot): "
        + " ".join(
            "down" if not up else ("-" if row == IDLE else f"r{row}") for up, row in zip(sim.node_up, sim.last_row)
        ),
        f"{'row':>4} {'task':>5} {'slots left':>10} {'best loss':>10} {'target':>9} {'progress':>9} {'work':>8}",
    ]
    for row, task in enumerate(sim.rows):
        if task is None:
            continue
        lines.append(
            f"{row:>4} {task.spec.task_id:>5} {task.spec.deadline - sim.slot + 1:>10} {task.best_loss:>10.4f} "
            f"{task.spec.target:>9.4f} {task.progress:>9.2f} {task.work:>8.2f}"
        )
    return "\n".join(lines)


def task_colour(task_id: int) -> tuple[int, int, int]:
    """A stable, well-spread colour per task id (golden-ratio hue walk)."""
    hue = (task_id * 0.618033988749895) % 1.0
    rgb = np.clip(np.abs((hue * 6.0 + np.array([0.0, 4.0, 2.0])) % 6.0 - 3.0) - 1.0, 0.0, 1.0)
    return tuple(int(v) for v in (60 + 170 * rgb))


def gantt_chart(assignments: list[np.ndarray], num_nodes: int, horizon: int) -> np.ndarray:
    """An ``(H, W, 3)`` uint8 image: one band per node, one column block per slot, coloured by task.

    ``assignments[t][i]`` is the task id node ``i`` trained in slot ``t``, ``-1`` idle, ``-2`` down.
    """
    height = num_nodes * (NODE_PX + GAP_PX) + GAP_PX
    image = np.full((height, max(horizon, 1) * SLOT_PX, 3), 255, dtype=np.uint8)
    for t, slot in enumerate(assignments):
        x = slice(t * SLOT_PX, (t + 1) * SLOT_PX)
        for node, task_id in enumerate(slot.tolist()):
            y0 = GAP_PX + node * (NODE_PX + GAP_PX)
            colour = _DOWN_RGB if task_id == -2 else _IDLE_RGB if task_id == IDLE else task_colour(task_id)
            image[y0 : y0 + NODE_PX, x] = colour
    return image
