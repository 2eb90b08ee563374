"""The generalist against one scheduler on training and on test curves, paired by seed.

    python benchmarks/curve_split_gap.py --workload rl --rival uniform        # 64 nodes, heavy load
    python benchmarks/curve_split_gap.py --workload tabular --rival srw --seeds 5

If the generalist's gap to the rival is as large on the curves it trained on as on the test curves,
the gap is not a matter of curves it never saw. Prints one JSON line per split: both completion
rates and the paired difference (mean and standard deviation over seeds, in points).
"""

from __future__ import annotations

import argparse
import json

import numpy as np
from generalisation import table_size  # the sibling script (benchmarks/ is on sys.path)

from mara_agents.evaluation import evaluate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workload", default="rl")
    parser.add_argument("--rival", default="uniform", help="the registered scheduler to compare with")
    parser.add_argument("--agent", default="mara_generalist", help="the agent spec compared with the rival")
    parser.add_argument("--nodes", type=int, default=64)
    parser.add_argument("--load", default="heavy")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--horizon", type=int, default=300)
    args = parser.parse_args()
    if min(args.nodes, args.seeds, args.horizon) < 1:
        parser.error("--nodes, --seeds and --horizon must be >= 1")
    env = dict(num_nodes=args.nodes, max_tasks=table_size(args.nodes), horizon=args.horizon)
    env |= dict(workload=args.workload, load=args.load)
    for split in ("train", "test"):
        rates = {
            name: np.array([r["completion_rate"] for r in evaluate(name, range(args.seeds), curve_split=split, **env)])
            for name in (args.agent, args.rival)
        }
        difference = 100.0 * (rates[args.agent] - rates[args.rival])
        spread = float(difference.std(ddof=1)) if args.seeds > 1 else float("nan")
        line = {"split": split, **{k: float(v.mean()) for k, v in rates.items()}}
        print(json.dumps(line | {"difference_pp": float(difference.mean()), "sd_pp": spread}), flush=True)


if __name__ == "__main__":
    main()
