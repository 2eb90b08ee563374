"""Per-run counters and the metrics derived from them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class RunCounters:
    """Running totals kept by the simulator; :meth:`metrics` turns them into the reported figures."""

    arrived: int = 0
    completed: int = 0
    expired: int = 0
    credited_work: float = 0.0
    wasted_work: float = 0.0
    busy_node_slots: int = 0
    up_node_slots: int = 0
    switches: int = 0
    failure_shortfall_sum: float = 0.0
    slots: int = 0

    def metrics(self, live: int) -> dict[str, float]:
        """The reported metrics (docs/environment.md), with ``live`` tasks still in the system.

        ``wasted_work`` is the fraction of credited work spent on tasks that expired;
        ``utilisation`` the fraction of up node-slots spent training; ``mean_failure_shortfall``
        the mean fraction of the required work an expired task was still missing.
        """
        return {
            "arrived": self.arrived,
            "completed": self.completed,
            "expired": self.expired,
            "live": live,
            "completion_rate": _ratio(self.completed, self.arrived),
            "wasted_work": _ratio(self.wasted_work, self.credited_work),
            "utilisation": _ratio(self.busy_node_slots, self.up_node_slots),
            "switches_per_task": _ratio(self.switches, self.arrived),
            "mean_failure_shortfall": _ratio(self.failure_shortfall_sum, self.expired),
            "credited_work": self.credited_work,
            "slots": self.slots,
        }


def _ratio(num: float, den: float) -> float:
    return float(num) / den if den else 0.0
