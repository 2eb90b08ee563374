"""A long run: 1,000,000 AEC node-turns of random masked actions; resident memory before and after.

    python benchmarks/long_run.py --turns 1000000 --forecaster none

Memory must not grow with run length: episodes are replayed back to back (reset with a new seed),
and the resident set size (RSS, from /proc/self/statm) is printed after the first episode and at the
end, with the peak in between.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

import mara_env


def rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        pages = int(fh.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=1_000_000)
    parser.add_argument("--forecaster", default="none")
    parser.add_argument("--num-nodes", type=int, default=8)
    args = parser.parse_args()
    env = mara_env.env(num_nodes=args.num_nodes, max_tasks=32, forecaster=args.forecaster)
    rng = np.random.default_rng(0)
    turns, episode, start = 0, 0, time.perf_counter()
    first = peak = None
    while turns < args.turns:
        env.reset(seed=episode)
        for _agent in env.agent_iter():
            obs, _, terminated, truncated, _ = env.last()
            if terminated or truncated:
                env.step(None)
                continue
            env.step(int(rng.choice(np.flatnonzero(obs["action_mask"]))))
            turns += 1
        episode += 1
        now = rss_mb()
        first = first if first is not None else now
        peak = max(peak or now, now)
    print(
        f"{turns:,} node-turns in {episode} episodes, {time.perf_counter() - start:.0f} s, forecaster={args.forecaster}"
    )
    print(f"RSS after the first episode: {first:.1f} MiB; at the end: {rss_mb():.1f} MiB; peak: {peak:.1f} MiB")


if __name__ == "__main__":
    main()
