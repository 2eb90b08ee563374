"""Write a copy of a MARA slot-actor checkpoint with its planners' skip paths scaled (a weight edit, no training).

    python examples/scale_paths.py --checkpoint mara_agents/mara/weights/mara_generalist.pt \\
        --factor 2 --paths edf uniform --out runs/scaled/edf_uniform_x2.pt

A hinted slot actor scores each turn as its learned scores plus the gated skip paths, each of which
plays one planner's rule (``srw``, ``edf``, ``uniform``). Scaling a path by ``--factor`` weighs it that
many times against the learned scores (``mara_agents.mara.gate_edits.scale_paths``): above 1 the policy
departs less from the planners its gate follows, at 0 it plays the learned scores alone. The copy
loads wherever a checkpoint does (``mara:PATH``); compare it with ``benchmarks/mara_select.py``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from mara_agents.mara.checkpoint import load_checkpoint, save_checkpoint
from mara_agents.mara.gate_edits import scale_paths
from mara_agents.mara.gate_paths import GATE_PATHS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checkpoint", type=Path, required=True, help="a slot-actor checkpoint with planner hints")
    parser.add_argument("--factor", type=float, required=True, help="how many times the paths weigh (>= 0)")
    parser.add_argument(
        "--paths", nargs="+", choices=GATE_PATHS, help="the skip paths to scale (default: every one it has)"
    )
    parser.add_argument("--out", type=Path, required=True, help="the edited checkpoint to write")
    args = parser.parse_args()
    if args.out.resolve() == args.checkpoint.resolve():
        parser.error("--out must not be the checkpoint itself (it would be replaced)")
    try:
        net, env, extra = load_checkpoint(args.checkpoint)
        scaled = scale_paths(net, args.factor, None if args.paths is None else tuple(args.paths))
    except ValueError as error:
        parser.error(f"{args.checkpoint}: {error}")
    edit = {"checkpoint": str(args.checkpoint), "factor": args.factor, "paths": args.paths or "all"}
    print(save_checkpoint(scaled, args.out, env, {**extra, "scaled_paths": edit}))


if __name__ == "__main__":
    main()
