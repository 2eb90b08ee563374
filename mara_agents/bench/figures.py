"""The bench's figures (matplotlib's Agg canvas, no pyplot state): bars, completion against load, Gantt;
:func:`save_figure` writes any such figure (the benchmark scripts' too).

Sizes follow the grid: the figures widen with the number of groups and agents, never below what their
titles and legends need, and a single load is drawn as bars (a line through one point says nothing).
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from mara_agents.bench.cells import cell_env
from mara_agents.bench.config import BenchConfig, offered_load
from mara_agents.bench.files import write_atomic
from mara_agents.stats import significance, summarize
from mara_env.workloads import LOAD_PRESETS

FIGURES = {
    "bars": "completion_by_workload_load.png",
    "lines": "completion_vs_load.png",
    "gantt": "gantt.png",
}
MIN_WIDTH = 6.4  # inches: room for a one-line title at the default font size
DPI = 110


def have_matplotlib() -> bool:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("mara bench: no figures: matplotlib is not installed (pip install 'mara[plot]')", file=sys.stderr)
        return False
    return True


def write_charts(out: Path, config: BenchConfig, done: list[dict]) -> list[Path]:
    """The two completion-rate figures (no agent code runs here)."""
    summaries = {(c["cell"]["agent"], c["cell"]["workload"], c["cell"]["load"]): summarize(c["records"]) for c in done}
    paths = [out / FIGURES["bars"], out / FIGURES["lines"]]
    plot_bars(config, summaries, paths[0])
    plot_lines(config, summaries, paths[1])
    return paths


def save_figure(fig: object, path: Path) -> None:
    """Write a ``matplotlib.figure.Figure`` (made without pyplot) to ``path`` as PNG, atomically."""
    write_atomic(Path(path), lambda fh: fig.savefig(fh, format="png"), binary=True)


def _rates(summaries: dict, keys: Sequence[tuple]) -> tuple[list[float], list[list[float]]]:
    """Means of the completion rate and their 95% CI as error bars clipped to [0, 1] (``nan`` if failed)."""
    means, below, above = [], [], []
    for key in keys:
        stat = summaries.get(key, {}).get("completion_rate", {"mean": math.nan, "ci95": 0.0})
        mean, ci = stat["mean"], 0.0 if math.isnan(stat["ci95"]) else stat["ci95"]
        means.append(mean)
        below.append(min(ci, max(mean, 0.0)) if not math.isnan(mean) else 0.0)
        above.append(min(ci, max(1.0 - mean, 0.0)) if not math.isnan(mean) else 0.0)
    return means, [below, above]


def _plotted_agents(config: BenchConfig, summaries: dict) -> list[str]:
    """The agents with at least one finished cell, in config order."""
    return [a for a in config.agents if any(key[0] == a for key in summaries)]


def _legend_width(agents: Sequence[str]) -> float:
    return 0.6 + 0.075 * max(len(a) for a in agents)


def _legend(ax: object, agents: Sequence[str]) -> None:
    ncol = 1 if len(agents) <= 14 else 2
    ax.legend(fontsize="small", loc="center left", bbox_to_anchor=(1.01, 0.5), ncol=ncol)


def plot_bars(config: BenchConfig, summaries: dict, path: Path) -> None:
    """Completion rate per workload x load (groups) and agent (bars), with 95% CI error bars."""
    save_figure(bars_figure(config, summaries), path)


def bars_figure(config: BenchConfig, summaries: dict) -> object:
    """The figure of :func:`plot_bars`."""
    from matplotlib.figure import Figure

    groups = [(w, load) for w in config.workloads for load in config.loads]
    agents = _plotted_agents(config, summaries)
    width = 0.8 / len(agents)
    legend = _legend_width(agents) * (1 if len(agents) <= 14 else 2)
    plot = len(groups) * max(1.0, 0.22 * len(agents))
    fig = Figure(figsize=(max(MIN_WIDTH, 1.0 + legend + plot), 4.4), dpi=DPI, layout="constrained")
    ax = fig.subplots()
    for i, agent in enumerate(agents):
        means, errors = _rates(summaries, [(agent, w, load) for w, load in groups])
        xs = [g + (i - (len(agents) - 1) / 2) * width for g in range(len(groups))]
        ax.bar(xs, means, width, yerr=errors, capsize=2, label=agent, error_kw={"elinewidth": 0.8})
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels([f"{w}\n{load}" for w, load in groups])
    ax.set_ylabel("completion rate")
    ax.set_ylim(0, 1.05)
    _legend(ax, agents)
    fig.suptitle("Completion rate by workload and load (mean, 95% CI)")
    return fig


def plot_lines(config: BenchConfig, summaries: dict, path: Path) -> None:
    """Completion rate against offered load: one panel per workload, one line per agent.

    With one load there is no line to draw: one bar per agent per panel instead.
    """
    save_figure(lines_figure(config, summaries), path)


def lines_figure(config: BenchConfig, summaries: dict) -> object:
    """The figure of :func:`plot_lines`."""
    from matplotlib.figure import Figure

    loads = sorted(config.loads, key=offered_load)
    xs = [offered_load(load) for load in loads]
    agents = _plotted_agents(config, summaries)
    single = len(loads) == 1
    panel = max(3.2, 0.35 * len(agents)) if single else max(4.0, 0.5 * len(loads))  # room for every tick
    width = max(MIN_WIDTH, panel * len(config.workloads) + _legend_width(agents) + 0.8)
    fig = Figure(figsize=(width, 3.9), dpi=DPI, layout="constrained")
    axes = fig.subplots(1, len(config.workloads), sharey=True, squeeze=False)[0]
    for ax, workload in zip(axes, config.workloads):
        for i, agent in enumerate(agents):
            means, errors = _rates(summaries, [(agent, workload, load) for load in loads])
            if single:
                ax.bar([i], means, 0.7, yerr=errors, capsize=2, label=agent, color=f"C{i % 10}")
                continue
            dodge = (i - (len(agents) - 1) / 2) * 0.012 * (max(xs) - min(xs) or 1.0)  # CIs side by side
            ax.errorbar([x + dodge for x in xs], means, yerr=errors, marker="o", ms=4, capsize=2, label=agent)
        if single:
            ax.set_xticks([])
            label = loads[0] if loads[0] not in LOAD_PRESETS else f"{loads[0]} ({xs[0]:g})"
            ax.set_xlabel(f"offered load {label}")
        else:
            ax.set_xticks(xs)
            ax.set_xticklabels([f"{x:g}\n{load}" if load in LOAD_PRESETS else f"{x:g}" for x, load in zip(xs, loads)])
            ax.set_xlabel("offered load")
        ax.set_title(workload)
    axes[0].set_ylabel("completion rate")
    axes[0].set_ylim(0, 1.02)
    _legend(axes[-1], agents)
    return fig


def plot_gantt(done_cell: dict, path: str | Path, search_path: str = "") -> None:
    """The Gantt chart of the first seed of a finished cell, replayed with ``render_mode="rgb_array"``.

    This runs the agent's code: the bench calls it in a worker process.
    """
    from matplotlib.figure import Figure

    from mara_agents.evaluation import env_config, play_episode
    from mara_agents.registry import load_agent
    from mara_env.env import raw_env
    from mara_env.render import GAP_PX, NODE_PX, SLOT_PX

    spec = done_cell["cell"]
    scheduler = load_agent(spec["agent"], search_path or os.getcwd())
    kwargs = cell_env(spec["env"], spec["workload"], spec["load"])
    env = raw_env(**env_config(scheduler, {**kwargs, "render_mode": "rgb_array"}))
    record = play_episode(env, scheduler, spec["seeds"][0])
    nodes, horizon = spec["env"]["num_nodes"], spec["env"]["horizon"]
    fig = Figure(figsize=(12, 0.35 * nodes + 1.2), dpi=DPI, layout="constrained")
    ax = fig.subplots()
    ax.imshow(env.render(), aspect="auto", interpolation="nearest")
    ax.set_yticks([GAP_PX + i * (NODE_PX + GAP_PX) + NODE_PX / 2 for i in range(nodes)])
    ax.set_yticklabels([f"node_{i}" for i in range(nodes)])
    ticks = range(0, horizon + 1, max(10, horizon // 6 // 10 * 10))
    ax.set_xticks([t * SLOT_PX for t in ticks])
    ax.set_xticklabels([str(t) for t in ticks])
    ax.set_xlabel("slot (colour = task, light grey = idle)")
    ax.set_title(
        f"{spec['agent']}, {spec['workload']}, load {spec['load']}, seed {spec['seeds'][0]}: {record['completed']} "
        f"of {record['arrived']} tasks completed ({record['completion_rate']:.0%})"
    )
    save_figure(fig, Path(path))


def difference_label(diff: dict | None) -> str:
    """A heatmap cell's text: the paired difference in points, ``▼``/``▲`` where its 95% interval lies
    wholly below/above 0, empty for a cell that was not run."""
    if diff is None or math.isnan(diff["mean"]):
        return ""
    mark = {-1: "▼", 0: "", 1: "▲"}[significance(diff)]
    return f"{100 * diff['mean']:+.1f}{mark}"


def plot_differences(diffs: dict, rows: Sequence[str], columns: Sequence[str], title: str, path: Path) -> None:
    """A heatmap of paired differences (:func:`~mara_agents.stats.paired_difference`) keyed by (row,
    column) in percentage points, red below 0 and blue above, each cell labelled by
    :func:`difference_label`."""
    save_figure(differences_figure(diffs, rows, columns, title), path)


def differences_figure(diffs: dict, rows: Sequence[str], columns: Sequence[str], title: str) -> object:
    """The figure of :func:`plot_differences`."""
    import numpy as np
    from matplotlib.figure import Figure

    grid = np.full((len(rows), len(columns)), np.nan)
    for (i, row), (j, column) in ((r, c) for r in enumerate(rows) for c in enumerate(columns)):
        if diffs.get((row, column)) is not None:
            grid[i, j] = 100 * diffs[(row, column)]["mean"]
    limit = max(1.0, float(np.nanmax(np.abs(grid)))) if np.isfinite(grid).any() else 1.0
    size = (max(MIN_WIDTH, 2.6 + 0.9 * len(columns)), 1.2 + 0.3 * len(rows))
    fig = Figure(figsize=size, dpi=DPI, layout="constrained")
    ax = fig.subplots()
    image = ax.imshow(grid, cmap="RdBu", vmin=-limit, vmax=limit, aspect="auto")
    for i, row in enumerate(rows):
        for j, column in enumerate(columns):
            dark = abs(grid[i, j]) > 0.6 * limit  # white text where the colour is deep
            label = difference_label(diffs.get((row, column)))
            ax.text(j, i, label, ha="center", va="center", fontsize=8, color="white" if dark else "black")
    ax.set_xticks(range(len(columns)), labels=list(columns))
    ax.set_yticks(range(len(rows)), labels=list(rows))
    fig.colorbar(image, ax=ax, label="paired difference (pp)")
    ax.set_title(title, fontsize=9)
    return fig
