"""Play one episode with a packaged scheduler and save the env's Gantt chart as a PNG.

    python examples/gantt.py --agent edf --seed 0 --out docs/img/gantt_edf.png

Needs matplotlib (``pip install -e ".[plot]"``).
"""

from __future__ import annotations

import argparse

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import mara_agents  # noqa: E402
import mara_env  # noqa: E402
from mara_env.render import GAP_PX, NODE_PX, SLOT_PX  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--agent", default="edf")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--num-nodes", type=int, default=8)
    parser.add_argument("--horizon", type=int, default=300)
    parser.add_argument("--out", default="gantt.png")
    args = parser.parse_args()

    env = mara_env.raw_env(num_nodes=args.num_nodes, horizon=args.horizon, render_mode="rgb_array")
    record = mara_agents.play_episode(env, mara_agents.make(args.agent), args.seed)
    image = env.render()

    fig, ax = plt.subplots(figsize=(12, 0.35 * args.num_nodes + 1.2), dpi=110)
    ax.imshow(image, aspect="auto", interpolation="nearest")
    ax.set_yticks([GAP_PX + i * (NODE_PX + GAP_PX) + NODE_PX / 2 for i in range(args.num_nodes)])
    ax.set_yticklabels([f"node_{i}" for i in range(args.num_nodes)])
    ticks = range(0, args.horizon + 1, 50)
    ax.set_xticks([t * SLOT_PX for t in ticks])
    ax.set_xticklabels([str(t) for t in ticks])
    ax.set_xlabel("slot (colour = task, light grey = idle)")
    ax.set_title(
        f"{args.agent}, seed {args.seed}: {record['completed']} of {record['arrived']} tasks completed "
        f"({record['completion_rate']:.0%}), utilisation {record['utilisation']:.0%}"
    )
    fig.tight_layout()
    fig.savefig(args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
