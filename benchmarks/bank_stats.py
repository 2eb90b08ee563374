"""A markdown table of the shipped curve banks: curves, points, splits, file size, build time, usable share.

    python benchmarks/bank_stats.py

"usable" = curves whose best value falls at least 10% below their first (the task generator's
condition for a curve to carry a target). Build time = the sum of the recorded per-run wall times.
"""

from __future__ import annotations

import argparse
from collections import Counter

import numpy as np

from mara_env.workloads.bank import BANK_DIR
from mara_env.workloads.recorded import MIN_DROP, RECORDED_BANKS, load_bank


def main() -> None:
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    print("| bank | curves | points (min-max) | train / val / test | families | file | build (sum of runs) | usable |")
    print("|---|---|---|---|---|---|---|---|")
    for name in RECORDED_BANKS:
        bank = load_bank(name)
        sizes = [len(y) for y in bank.losses]
        splits = Counter(bank.splits())
        usable = np.mean([np.min(y) <= (1 - MIN_DROP) * y[0] for y in bank.losses])
        kb = (BANK_DIR / f"{name}.npz").stat().st_size / 1024
        seconds = sum(m.get("wall_time", 0.0) for m in bank.meta)
        print(
            f"| `{name}` | {len(bank)} | {min(sizes)}-{max(sizes)} | {splits['train']} / {splits['val']} / "
            f"{splits['test']} | {len(bank.families())} | {kb:.0f} kB | {seconds:.0f} s | {usable:.0%} |"
        )


if __name__ == "__main__":
    main()
