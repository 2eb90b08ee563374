"""The bench's figures stay readable whatever the number of loads and agents: nothing is cut off."""

from __future__ import annotations

import math

import pytest

from mara_agents.bench import BenchConfig
from mara_agents.bench.figures import bars_figure, difference_label, differences_figure, lines_figure

pytest.importorskip("matplotlib")


def _summaries(config: BenchConfig) -> dict:
    stat = {"completion_rate": {"mean": 0.5, "ci95": 0.1, "n": 2}}
    return {(a, w, load): stat for a in config.agents for w in config.workloads for load in config.loads}


def _inside(fig: object, artists: list) -> bool:
    """Every artist's box lies within the figure once drawn (a cut-off title would stick out)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)  # the canvas savefig uses
    canvas.draw()
    renderer, bounds = canvas.get_renderer(), fig.bbox
    for artist in artists:
        box = artist.get_window_extent(renderer)
        if box.x0 < bounds.x0 - 1 or box.x1 > bounds.x1 + 1 or box.y0 < bounds.y0 - 1 or box.y1 > bounds.y1 + 1:
            return False
    return True


@pytest.mark.parametrize(
    "agents, workloads, loads",
    [
        (("edf",), ("synthetic",), ("train",)),
        (("edf", "a_rather_long_module.name:SomeScheduler"), ("synthetic", "vision"), ("train",)),
        (tuple(f"agent_{i}" for i in range(18)), ("synthetic",), ("train", "heavy", "extreme")),
        (("edf", "lara"), ("synthetic",), tuple(f"{1 + i / 10:g}" for i in range(12))),
    ],
    ids=["one-agent-one-load", "long-name-one-load", "eighteen-agents", "twelve-loads"],
)
def test_titles_legends_and_labels_fit_the_figures(agents, workloads, loads):
    config = BenchConfig(agents=agents, workloads=workloads, loads=loads)
    summaries = _summaries(config)
    bars = bars_figure(config, summaries)
    assert _inside(bars, [bars._suptitle, *(ax.get_legend() for ax in bars.axes if ax.get_legend())])
    lines = lines_figure(config, summaries)
    axes = lines.axes
    assert _inside(lines, [ax.title for ax in axes] + [axes[-1].get_legend()])
    if len(loads) == 1:  # one load: bars, not a column of dots
        assert all(len(ax.patches) == len(agents) for ax in axes)
    else:
        ticks = [t.get_window_extent() for t in axes[0].get_xticklabels() if t.get_text()]
        assert all(a.x1 <= b.x0 for a, b in zip(ticks, ticks[1:])), "tick labels overlap"


def test_difference_labels_mark_only_intervals_clear_of_zero():
    assert difference_label({"mean": -0.031, "ci95": 0.02}) == "-3.1▼"  # -5.1 .. -1.1
    assert difference_label({"mean": 0.025, "ci95": 0.01}) == "+2.5▲"  # +1.5 .. +3.5
    assert difference_label({"mean": -0.01, "ci95": 0.02}) == "-1.0"  # -3 .. +1 holds 0
    assert difference_label({"mean": 0.004, "ci95": math.nan}) == "+0.4"  # one seed: no interval
    assert difference_label(None) == ""


def test_difference_heatmap_colours_each_cell_and_leaves_missing_ones_blank():
    diffs = {("rl heavy", "M32"): {"mean": -0.08, "ci95": 0.03}, ("rl heavy", "M64"): {"mean": 0.02, "ci95": 0.05}}
    rows, columns = ["rl heavy", "trace"], ["M32", "M64"]
    title = "mara_generalist minus the best other non-oracle scheduler\n(paired by seed; ▼ ▲: 95% interval clear of 0)"
    fig = differences_figure(diffs, rows, columns, title)
    ax = fig.axes[0]
    grid = ax.images[0].get_array()
    assert grid[0, 0] == pytest.approx(-8.0) and grid[0, 1] == pytest.approx(2.0)
    assert grid.mask[1].all()  # the trace row was not run at these sizes: no colour
    assert ax.images[0].norm.vmin == pytest.approx(-8.0) and ax.images[0].norm.vmax == pytest.approx(8.0)
    labels = [t.get_text() for t in ax.texts]
    assert labels == ["-8.0▼", "+2.0", "", ""]
    assert _inside(fig, [ax.title, *ax.get_yticklabels()])
