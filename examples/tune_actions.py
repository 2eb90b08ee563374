"""Refit a MARA policy on its own play, every turn labelled by its teacher (DAgger on the actions).

    python examples/tune_actions.py --checkpoint mara_agents/mara/weights/mara_generalist.pt \\
        --out runs/dagger --train-args "--generalist"

``--train-args`` are the ``examples/train_mara.py`` flags of the run that made the checkpoint: they give
the teacher, the scenario distribution (training curves, seeds no evaluation plays), the critic's size
and the gate loss. Each of ``--rounds`` rounds plays ``--episodes`` scenarios with the current policy,
asks the teacher for its action at every recorded turn, and refits the whole network by cloning on
every round's turns so far (``mara_agents.mara.action_dagger``); ``--anchor-episodes N`` joins the first N
warm-start episodes of the run ``--anchor-args`` names to every refit (the original DAgger keeps its
first data set; without it the refit drifts where its scenarios are few). Writes into ``--out``:
``checkpoint.pt`` (the refitted network; with ``--graft-load-signal`` the copy it started from is
``grafted.pt``) and ``report.json`` (per round: turns, the policy's completion
on its own episodes, the fit's loss and agreement, seconds). Judge the result with
``benchmarks/generalisation.py`` and ``benchmarks/mara_agreement.py``. ``--freeze encoder gate`` refits the
turn heads alone: the gate keeps the slot token it was fitted to. ``--path-weight edf 3`` counts each turn
whose label followed ``edf``'s rule three times in the cloning loss; the report gives the fit's accuracy on
each rule's turns.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

# the play processes each run one episode at a time, --jobs of them at once: numpy's BLAS gets one
# thread in each (set before numpy loads; a variable you set is kept)
for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

from tune_gate import checked_args, training_config, write_report  # noqa: E402

from mara_agents.mara.action_dagger import action_rounds, action_sampler  # noqa: E402
from mara_agents.mara.checkpoint import load_checkpoint, save_checkpoint  # noqa: E402
from mara_agents.mara.frozen_parts import FROZEN_PARTS, frozen_names  # noqa: E402
from mara_agents.mara.gate_paths import GATE_PATHS  # noqa: E402
from mara_agents.mara.imitation import Demonstrations, collect_demonstrations  # noqa: E402
from mara_agents.mara.input_grafts import graft_load_signal  # noqa: E402
from mara_agents.mara.path_weighting import check_path_weights  # noqa: E402
from mara_agents.mara.ppo import batch_sizes, warm_start_seeds  # noqa: E402
from mara_agents.mara.scenarios import Padding, ScenarioSampler  # noqa: E402


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checkpoint", type=Path, required=True, help="a MARA checkpoint (the first round's player)")
    parser.add_argument("--out", type=Path, required=True, help="directory for checkpoint.pt and report.json")
    parser.add_argument(
        "--train-args",
        default="--generalist",
        help="the train_mara.py flags of the run that made the checkpoint, one string (default: --generalist)",
    )
    parser.add_argument("--episodes", type=int, default=100, help="scenarios played per round (default 100)")
    parser.add_argument("--rounds", type=int, default=1, help="play-and-refit rounds (default 1)")
    parser.add_argument("--epochs", type=int, default=2, help="cloning epochs per refit (default 2)")
    parser.add_argument("--learning-rate", type=float, default=3e-4, help="the refit's Adam step (default 3e-4)")
    parser.add_argument("--jobs", type=int, default=2, help="processes that play episodes (default 2)")
    parser.add_argument(
        "--anchor-episodes",
        type=int,
        default=0,
        help="also refit on the first N warm-start episodes of the run --anchor-args names, replayed by its "
        "teacher on its own seeds (DAgger's first data set; default 0: own play alone)",
    )
    parser.add_argument(
        "--anchor-args",
        default="--generalist",
        help="the train_mara.py flags of the run whose warm-start episodes anchor the refit (default: --generalist)",
    )
    parser.add_argument(
        "--graft-load-signal",
        action="store_true",
        help="refit a copy that also reads the arrival rate (mara_agents.mara.input_grafts; its new weights start "
        "at 0, so it first plays as the checkpoint), for a teacher whose labels follow the load",
    )
    parser.add_argument(
        "--freeze",
        nargs="+",
        default=[],
        metavar="PART",
        help=f"parts every refit holds fixed, of {', '.join(FROZEN_PARTS)} (default: none); 'encoder gate' "
        "moves only the turn heads, so the gate keeps reading the slot token it was fitted to",
    )
    parser.add_argument(
        "--path-weight",
        nargs=2,
        action="append",
        default=[],
        metavar=("RULE", "WEIGHT"),
        help=f"weigh the cloning loss of turns whose label followed RULE (one of {', '.join(GATE_PATHS)}) by WEIGHT "
        "(> 0; others weigh 1); repeat for several rules (mara_agents.mara.path_weighting)",
    )
    args = checked_args(parser, ("episodes", "rounds", "epochs", "jobs"))
    if args.anchor_episodes < 0:
        parser.error(f"--anchor-episodes must be >= 0, got {args.anchor_episodes}")
    args.path_weight = parsed_path_weights(parser, args.path_weight)
    return args


def parsed_path_weights(parser: argparse.ArgumentParser, pairs: list[list[str]]) -> dict[str, float]:
    """``--path-weight`` pairs as ``{rule: weight}``; a parser error naming a bad or repeated rule or weight."""
    weights: dict[str, float] = {}
    for path, text in pairs:
        if path in weights:
            parser.error(f"--path-weight: {path!r} is given twice")
        try:
            weights[path] = float(text)
        except ValueError:
            parser.error(f"--path-weight {path}: the weight must be a number, got {text!r}")
    try:
        return check_path_weights(weights)
    except ValueError as error:
        parser.error(f"--path-weight: {error}")


def padded_shape(env: dict, scenarios: ScenarioSampler | None) -> tuple[int, int]:
    """The (table rows, nodes) that episodes of ``env`` (drawn by ``scenarios``, if any) are stored at."""
    padding = Padding.for_scenarios(scenarios)
    return (env["max_tasks"], env["num_nodes"]) if padding is None else (padding.max_tasks, padding.max_nodes)


def anchor_episodes(anchor_args: str, episodes: int, jobs: int, own_shape: tuple[int, int]) -> Demonstrations | None:
    """The first ``episodes`` warm-start demonstrations of the run ``anchor_args`` names (``None`` for 0),
    refused before any play unless they are stored at ``own_shape``, the own-play episodes' shape (the
    refit joins the two)."""
    if episodes == 0:
        return None
    run = training_config(anchor_args)
    if run.teacher is None:
        raise SystemExit(f"--anchor-args {anchor_args!r} names no teacher: it has no warm-start episodes")
    shape = padded_shape(run.env, run.scenarios)
    if shape != own_shape:
        raise SystemExit(
            f"--anchor-args {anchor_args!r} stores episodes at {shape[0]} rows and {shape[1]} nodes, the own play"
            f" at {own_shape[0]} and {own_shape[1]}: the refit cannot join them (name a run of the same sizes)"
        )
    seeds = warm_start_seeds(run.seed, episodes, run.scenarios is not None)
    return collect_demonstrations(run.env, run.teacher, seeds, jobs, True, run.scenarios)


def main() -> None:
    args = parse_args()
    net, env, extra = load_checkpoint(args.checkpoint)
    config = training_config(args.train_args)
    if config.teacher is None:
        raise SystemExit(f"--train-args {args.train_args!r} names no teacher: nothing labels the turns")
    if args.graft_load_signal:  # refused, like a bad anchor, before any play or file
        try:
            net = graft_load_signal(net)
        except (ValueError, KeyError, AttributeError) as error:
            message = f"{args.checkpoint} is not a slot actor without it ({error})"
            raise SystemExit(f"--graft-load-signal: {message}") from None
    try:
        frozen_names(net, args.freeze)
    except ValueError as error:
        raise SystemExit(f"--freeze: {error}") from None
    scenarios = action_sampler(config.scenarios, config.action_focus)  # the run's, with any --action-focus
    anchor = anchor_episodes(args.anchor_args, args.anchor_episodes, args.jobs, padded_shape(env, scenarios))
    args.out.mkdir(parents=True, exist_ok=True)
    player = save_checkpoint(net, args.out / "grafted.pt", env, extra) if args.graft_load_signal else args.checkpoint
    rounds = action_rounds(
        net, player, config.teacher, scenarios, args.out / "checkpoint.pt", batch_sizes(config),
        args.rounds, args.episodes, args.epochs, args.learning_rate, config.gate_coef, config.row_buckets, args.jobs,
        anchor=anchor, freeze=args.freeze, path_weights=args.path_weight,
    )  # fmt: skip
    extra = {"anchor_episodes": args.anchor_episodes, "anchor_args": args.anchor_args} if anchor is not None else {}
    extra |= {"freeze": args.freeze} if args.freeze else {}
    extra |= {"path_weights": args.path_weight} if args.path_weight else {}
    write_report(args, rounds, "refitted policy", extra)


if __name__ == "__main__":
    main()
