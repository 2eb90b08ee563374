"""Means and 95% confidence intervals of per-episode metrics."""

from __future__ import annotations

import math
from collections.abc import Sequence

# Two-sided 95% Student-t critical values for 1..30 degrees of freedom.
_T95 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip


def t_critical_95(dof: int) -> float:
    """Two-sided 95% Student-t quantile; a Cornish-Fisher expansion beyond 30 degrees of freedom."""
    if dof < 1:
        return float("nan")
    if dof <= len(_T95):
        return _T95[dof - 1]
    z = 1.959964
    return z + (z**3 + z) / (4 * dof) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * dof**2)


def mean_ci95(values: Sequence[float]) -> tuple[float, float]:
    """Mean and half-width of its 95% t-interval (``nan`` half-width for fewer than 2 values)."""
    n = len(values)
    if n == 0:
        raise ValueError("mean_ci95 needs at least one value")
    mean = sum(values) / n
    if n < 2:
        return mean, float("nan")
    var = sum((v - mean) ** 2 for v in values) / (n - 1)
    return mean, t_critical_95(n - 1) * math.sqrt(var / n)


def summarize(records: Sequence[dict]) -> dict[str, dict[str, float]]:
    """For every numeric metric of ``records`` (except ``seed``): ``{"mean", "ci95", "n"}``."""
    if not records:
        raise ValueError("summarize needs at least one record")
    keys = [k for k, v in records[0].items() if k != "seed" and isinstance(v, (int, float)) and not isinstance(v, bool)]
    summary = {}
    for key in keys:
        mean, half = mean_ci95([float(r[key]) for r in records])
        summary[key] = {"mean": mean, "ci95": half, "n": len(records)}
    return summary


def paired_difference(values: Sequence[float], reference: Sequence[float]) -> dict[str, float]:
    """``{"mean", "ci95", "n"}`` of ``values[i] - reference[i]``: the two lists are paired by position (seed)."""
    if len(values) != len(reference):
        raise ValueError(f"paired values need the same length, got {len(values)} and {len(reference)}")
    mean, half = mean_ci95([float(v) - float(r) for v, r in zip(values, reference)])
    return {"mean": mean, "ci95": half, "n": len(values)}


def significance(stat: dict) -> int:
    """-1 where the 95% interval of ``stat`` (``{"mean", "ci95"}``) lies wholly below 0, +1 wholly above,
    0 otherwise (an undefined interval, as with one seed, included)."""
    mean, half = stat["mean"], stat["ci95"]
    if math.isnan(mean) or math.isnan(half):
        return 0
    return -1 if mean + half < 0 else 1 if mean - half > 0 else 0


def format_mean_ci(stat: dict | None, digits: int = 3, scale: float = 1.0, signed: bool = False, unit: str = "") -> str:
    """``mean ± ci95`` of a summary entry (times ``scale``); ``n/a`` for a missing or undefined mean.

    A half-width that is not a number (one value) is shown as ``n/a``; ``signed`` writes ``+`` before
    positive means (differences); ``unit`` follows the half-width (``" pp"``).
    """
    mean, half = (None, None) if stat is None else (stat.get("mean"), stat.get("ci95"))
    if mean is None or not math.isfinite(mean):
        return "n/a"
    shown = f"{mean * scale:+.{digits}f}" if signed else f"{mean * scale:.{digits}f}"
    if half is None or not math.isfinite(half):  # one value (or null in a JSON summary): no interval
        return f"{shown} ± n/a{unit}"
    return f"{shown} ± {half * scale:.{digits}f}{unit}"


def format_table(header: Sequence[str], rows: Sequence[Sequence[object]], **style) -> str:
    """A markdown table; each cell is text as given, or a summary entry shown by :func:`format_mean_ci`.

    ``None`` cells are shown as ``n/a``; ``style`` is passed to :func:`format_mean_ci` (``digits``, ...).
    """
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        cells = [c if isinstance(c, str) else format_mean_ci(c, **style) for c in row]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
