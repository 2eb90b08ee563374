"""The bench's figures stay readable whatever the number of loads and agents: nothing is cut off."""

from __future__ import annotations

import pytest

from mara_agents.bench import BenchConfig
from mara_agents.bench.figures import bars_figure, lines_figure

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
