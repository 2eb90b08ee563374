"""Write a MARA checkpoint between two of one architecture: every weight ``A + alpha (B - A)``.

    python examples/interpolate_weights.py --start runs/go2/checkpoint.pt --end runs/d13/checkpoint.pt \\
        --alpha 0.5 --out runs/mix50/checkpoint.pt

Meant for a refit ``--end`` and the network it started from, ``--start``
(``mara_agents.mara.weight_interpolation``). The copy keeps ``--end``'s env settings and records both
files and ``--alpha``; it loads wherever a checkpoint does (``mara:PATH``). Judge it with
``benchmarks/generalisation.py``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from mara_agents.mara.checkpoint import load_checkpoint, save_checkpoint
from mara_agents.mara.weight_interpolation import interpolate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--start", type=Path, required=True, help="the checkpoint at alpha 0")
    parser.add_argument("--end", type=Path, required=True, help="the checkpoint at alpha 1 (its env is kept)")
    parser.add_argument("--alpha", type=float, required=True, help="where between them, in [0, 1]")
    parser.add_argument("--out", type=Path, required=True, help="the checkpoint to write")
    args = parser.parse_args()
    if args.out.resolve() in (args.start.resolve(), args.end.resolve()):
        parser.error("--out must not be --start or --end (it would be replaced)")
    try:
        start = load_checkpoint(args.start)[0]
        end, env, extra = load_checkpoint(args.end)
        mixed = interpolate(start, end, args.alpha)
    except ValueError as error:
        parser.error(str(error))
    record = {"start": str(args.start), "end": str(args.end), "alpha": args.alpha}
    print(save_checkpoint(mixed, args.out, env, {**extra, "interpolated": record}))


if __name__ == "__main__":
    main()
