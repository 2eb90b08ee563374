"""The named features of the observation and the state, their meaning, and their units.

Times are in units of :data:`SLOT_SCALE` slots and work in units of :data:`WORK_SCALE` node-slots, so
features stay O(1) across configurations; :class:`~mara_env.observation.decoded.DecodedObservation`
converts them back to slots and node-slots by name.
"""

from __future__ import annotations

import math

SLOT_SCALE = 100.0
WORK_SCALE = 100.0
BOUND = 1.0e4  # every feature is clipped into [-BOUND, BOUND]

HEADER = ("max_tasks", "history_window", "num_nodes", "forecasts")
NODE_FEATURES = ("node_id", "speed", "up", "last_action")
GLOBAL_FEATURES = ("time", "free_nodes", "up_nodes", "live_tasks", "queued_tasks", "arrival_rate")
ROW_FEATURES = (
    "present",
    "slots_left",
    "age",
    "loss",
    "best_loss",
    "target",
    "log_loss_to_target",
    "progress",
    "work_done",
    "nodes_last_slot",
    "chosen_now",
    "scaling_exponent",
    "observations",
)
FORECAST_FEATURES = ("remaining_p10", "remaining_p50", "remaining_p90", "p_finish", "forecast_valid")
WINDOW_FEATURES = ("window_work", "window_log_loss")

FEATURE_DOCS = {
    "max_tasks": "K_max, rows in the table",
    "history_window": "H, points in each row's history window",
    "num_nodes": "M, nodes in the cluster",
    "forecasts": "1 if the env computes forecast features (a forecaster is configured), 0 if not",
    "node_id": "this node's index / M",
    "speed": "this node's relative speed",
    "up": "1 if this node is up, 0 if down",
    "last_action": "action this node took last slot / K_max (0 = idle)",
    "time": "current slot / horizon",
    "free_nodes": "nodes still to decide this slot, this one included / M",
    "up_nodes": "nodes up / M",
    "live_tasks": "occupied rows / K_max",
    "queued_tasks": "tasks waiting for a row / K_max",
    "arrival_rate": "tasks arrived since the episode began / slots so far (this one included) / M",
    "present": "1 if the row holds a task",
    "slots_left": "slots left to train including this one (deadline - slot + 1) / SLOT_SCALE",
    "age": "slots since arrival / SLOT_SCALE",
    "loss": "latest reported loss",
    "best_loss": "lowest reported loss so far (completion tests this)",
    "target": "target loss",
    "log_loss_to_target": "ln(best_loss / target); <= 0 means done",
    "progress": "log-loss progress from the first loss to the target, in [0, 1]",
    "work_done": "cumulative work / WORK_SCALE",
    "nodes_last_slot": "nodes that trained the task last slot / M",
    "chosen_now": "nodes earlier in this slot that chose this row / M (the autoregressive signal)",
    "scaling_exponent": "alpha of the task's data-parallel scaling n ** alpha",
    "observations": "observed points (including work 0) / H, capped at 1",
    "remaining_p10": "forecast remaining work to target, 10th percentile / WORK_SCALE (0 without forecaster)",
    "remaining_p50": "forecast remaining work, median / WORK_SCALE",
    "remaining_p90": "forecast remaining work, 90th percentile / WORK_SCALE",
    "p_finish": "forecast probability of finishing in time at the current share",
    "forecast_valid": "1 if the forecaster produced a forecast for this row",
    "window_work": "window point: cumulative work / WORK_SCALE (oldest first, newest last, zero-padded left)",
    "window_log_loss": "window point: ln(loss / target)",
}


def safe_log_ratio(a: float, b: float) -> float:
    """``ln(a / b)`` for positive inputs, clipped to the observation bound."""
    return min(max(math.log(a / b), -BOUND), BOUND)
