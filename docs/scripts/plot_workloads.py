"""Draw the figures of docs/workloads.md: sample curves of every family and the arrival processes.

    python docs/scripts/plot_workloads.py --out docs/img

Needs matplotlib (``pip install -e ".[plot]"``).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from mara_env.workloads import BurstyArrivals, PoissonArrivals, TraceArrivals, load_bank  # noqa: E402
from mara_env.workloads.recorded import RECORDED_BANKS  # noqa: E402

PER_FAMILY = 4


def _groups(bank) -> tuple[list[str], list[str]]:
    """Panel label of every curve: its family, or its learning-rate schedule in a one-family bank."""
    if len(bank.families()) > 1:
        labels = [m["family"] for m in bank.meta]
    else:
        labels = [f"{m['family']}, {m.get('config', {}).get('schedule', 'all')}" for m in bank.meta]
    return labels, sorted(set(labels))


def plot_bank(name: str, out: Path, seed: int = 0) -> Path:
    """A panel per family (per schedule in a one-family bank), a few curves each (normalised x, log loss)."""
    bank = load_bank(name)
    labels, families = _groups(bank)
    cols = min(4, len(families))
    rows = -(-len(families) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.2 * cols, 2.4 * rows), squeeze=False, sharex=True)
    rng = np.random.default_rng(seed)
    for ax, family in zip(axes.flat, families):
        members = [i for i, label in enumerate(labels) if label == family]
        for i in rng.choice(members, size=min(PER_FAMILY, len(members)), replace=False):
            x, y = bank.curve(int(i))
            ax.plot((x - x[0]) / (x[-1] - x[0]), y, lw=0.9)
        ax.set_yscale("log")
        ax.set_title(f"{family} ({len(members)})", fontsize=9)
        ax.tick_params(labelsize=7)
    for ax in list(axes.flat)[len(families) :]:
        ax.axis("off")
    fig.supxlabel("share of the recorded run", fontsize=9)
    fig.supylabel("recorded metric (log scale)", fontsize=9)
    fig.suptitle(f"{name} bank: {len(bank)} curves, {PER_FAMILY} random ones per panel", fontsize=10)
    fig.tight_layout()
    path = out / f"curves_{name}.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


EXAMPLE_TRACE = Path(__file__).resolve().parents[2] / "examples" / "traces" / "example_trace.csv"


def plot_arrivals(out: Path, rate: float = 0.4, horizon: int = 600) -> Path:
    """Arrivals per 10-slot window of Poisson and bursty processes (same mean rate) and a trace replay."""
    fig, ax = plt.subplots(figsize=(9, 2.8))
    for process in (PoissonArrivals(), BurstyArrivals(), TraceArrivals(EXAMPLE_TRACE)):
        plan = process.plan(np.random.default_rng(3), rate, horizon)
        counts = np.bincount(plan.slots, minlength=horizon).reshape(-1, 10).sum(axis=1)
        ax.step(np.arange(counts.size) * 10, counts, where="post", label=f"{process.name} ({plan.slots.size} tasks)")
    ax.axhline(rate * 10, color="grey", ls=":", lw=1, label="mean")
    ax.set_xlabel("slot")
    ax.set_ylabel("arrivals per 10 slots")
    ax.set_title(
        f"Poisson and bursty at {rate} tasks per slot; the example trace (2 days) fitted to {horizon} slots",
        fontsize=10,
    )
    ax.legend(fontsize=8)
    fig.tight_layout()
    path = out / "arrivals.png"
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path("docs/img"))
    parser.add_argument("--banks", nargs="+", default=["synthetic", *RECORDED_BANKS])
    parser.add_argument("--skip-arrivals", action="store_true", help="only the curve figures")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for name in args.banks:
        print("wrote", plot_bank(name, args.out))
    if not args.skip_arrivals:
        print("wrote", plot_arrivals(args.out))


if __name__ == "__main__":
    main()
