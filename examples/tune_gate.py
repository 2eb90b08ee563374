"""Fit a MARA slot actor's gate on its own play, labelled by its teacher (DAgger on the gate alone).

    python examples/tune_gate.py --checkpoint runs/t54/warm_start.pt --out runs/t54_gate \\
        --train-args "--generalist --load-signal --gate-context"
    python examples/tune_gate.py --checkpoint runs/t54/warm_start.pt --labels runs/t54_gate/labels.npz \\
        --steps 2000 --out runs/t54_refit        # refit on saved labels (one file or several), no play
    python examples/tune_gate.py --checkpoint mara_agents/mara/weights/mara_generalist.pt \\
        --graft-gate-context --out runs/gate_graft  # a gate that also reads the load, for a linear one
    python examples/tune_gate.py --checkpoint mara_agents/mara/weights/mara_generalist.pt \
        --graft-gate-rule --out runs/gate_rule  # a gate that also reads load_switch's choice of path
    python examples/tune_gate.py --checkpoint runs/g72/rule_gate_player.pt \
        --labels runs/g72/warm_start_rule_gate_labels.npz --teach-only tabular,17-64 --teach-only rl,17-64,10 \
        --steps 2000 --out runs/g72_trw   # teach two corners, big rl's labels counted 10 times; hold the rest
    python examples/tune_gate.py --checkpoint runs/g72/rule_gate_player.pt --rule-on-big-clusters \
        --labels runs/g72/warm_start_rule_gate_labels.npz --teach-only tabular,17-64 --steps 2000 \
        --out runs/g72_big   # the same, the gate reading the rule on clusters of 17 nodes or more only
    python examples/tune_gate.py --checkpoint runs/g72_big/checkpoint.pt --split-gate \
        --labels runs/g72/warm_start_rule_gate_labels.npz --teach-only tabular,17-64 --steps 2000 \
        --out runs/g72_split   # big clusters get a gate of their own, and only it is fitted

``--train-args`` are the ``examples/train_mara.py`` flags of the run that made the checkpoint: they give
the teacher and the scenario distribution (training curves, seeds no evaluation plays). Each of
``--rounds`` rounds plays ``--episodes`` scenarios with the current gate, labels every slot with the
planner the teacher would follow, and refits the gate's layers on every round's labels so far; the
rest of the network never changes (``mara_agents.mara.gate_dagger``). Writes into ``--out``:
``checkpoint.pt`` (the network with the fitted gate), ``labels.npz`` (every round's labels, with each
slot's workload and cluster size, to refit or inspect without playing again; they record the encoder
whose slot tokens they hold, and a ``--labels`` refit of a network with another encoder is refused)
and ``report.json`` (per round: labelled slots, cross-entropy and agreement before and after the fit, seconds); with
``--graft-gate-context`` also ``grafted.pt``, the copy with a gate that reads the arrival rate and
``log2 M`` (``mara_agents.mara.input_grafts``), the first round's player; with ``--graft-gate-rule`` the
copy whose gate also reads the path ``load_switch``'s rule names (with ``--rule-on-big-clusters`` on
clusters of at least 17 nodes only; that flag alone limits a checkpoint's gate that reads the rule
already, and a ``--labels`` refit reads the labels as the gate does). ``--split-gate`` gives clusters of
at least 17 nodes a gate of their own and fits only that one, so small clusters play exactly as before;
the rounds of a checkpoint already split fit its big clusters' gate alone too.
``--first-episode N`` starts the
rounds at the N-th gate scenario, so a DAgger round on another network's play meets new scenarios. Judge the result with
``benchmarks/gate_load_response.py --own-play`` and ``benchmarks/generalisation.py``.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from pathlib import Path

# the play processes each run one episode at a time, --jobs of them at once: numpy's BLAS gets one
# thread in each (set before numpy loads; a variable you set is kept)
for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

from mara_agents.mara.checkpoint import load_checkpoint, save_checkpoint  # noqa: E402
from mara_agents.mara.context_features import RULE_MIN_NODES  # noqa: E402
from mara_agents.mara.gate_dagger import (  # noqa: E402
    Corner,
    GateLabels,
    check_first_episode,
    check_hold_weight,
    dagger_rounds,
    refit_on_labels,
)
from mara_agents.mara.input_grafts import (  # noqa: E402
    graft_gate_context,
    graft_gate_rule,
    rule_on_big_clusters,
    split_gate,
)
from mara_agents.mara.slot_network import SlotMARANet  # noqa: E402
from mara_agents.mara.teacher import parse_node_range  # noqa: E402
from mara_env.workloads.registry import WORKLOADS  # noqa: E402


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checkpoint", type=Path, required=True, help="a slot-actor checkpoint with planner hints")
    parser.add_argument(
        "--out", type=Path, required=True, help="directory for checkpoint.pt, labels.npz and report.json"
    )
    parser.add_argument(
        "--train-args",
        default="--generalist",
        help="the train_mara.py flags of the run that made the checkpoint, one string (default: --generalist)",
    )
    parser.add_argument(
        "--labels",
        type=Path,
        nargs="+",
        help="fit once on these labels.npz of earlier runs, joined (no play; each read by this network's encoder)",
    )
    parser.add_argument("--episodes", type=int, default=200, help="scenarios played per round (default 200)")
    parser.add_argument("--rounds", type=int, default=2, help="label-and-fit rounds (default 2)")
    parser.add_argument("--steps", type=int, default=400, help="full-batch Adam steps per fit (default 400)")
    parser.add_argument("--learning-rate", type=float, default=3e-3)
    parser.add_argument("--jobs", type=int, default=2, help="processes that play episodes (default 2)")
    parser.add_argument(
        "--first-episode",
        type=int,
        default=0,
        metavar="N",
        help="play the gate scenarios from the N-th on (default 0), so a further DAgger round on another network's "
        "play meets scenarios no earlier round played",
    )
    parser.add_argument(
        "--graft-gate-context",
        action="store_true",
        help="fit a copy whose gate is a tanh layer that also reads the arrival rate and log2 M "
        "(mara_agents.mara.input_grafts; it first weighs the paths as the checkpoint), for labels a linear gate "
        "cannot follow",
    )
    parser.add_argument(
        "--graft-gate-rule",
        action="store_true",
        help="fit a copy whose gate also reads, one-hot, the path load_switch's rule names for each slot "
        "(srw, edf or uniform; mara_agents.mara.input_grafts.graft_gate_rule, at weight 0 so it first plays as the "
        "checkpoint; a linear gate first gets --graft-gate-context's tanh layer), so the refit has to learn only "
        "where to follow the rule",
    )
    parser.add_argument(
        "--rule-on-big-clusters",
        action="store_true",
        help="a gate that reads load_switch's path (the checkpoint's or --graft-gate-rule's) reads it only on clusters "
        f"of at least {RULE_MIN_NODES} nodes, zeros below (mara_agents.mara.input_grafts.rule_on_big_clusters), so "
        "what the refit learns of the rule on big clusters cannot reach small ones through it; --labels are read the "
        "same way",
    )
    parser.add_argument(
        "--fit-rule-only",
        action="store_true",
        help="with --labels: fit only the gate's weights on the rule's path (a gate that reads it); with "
        f"--rule-on-big-clusters the gate on clusters below {RULE_MIN_NODES} nodes then weighs the paths exactly as "
        "the checkpoint's",
    )
    parser.add_argument(
        "--split-gate",
        action="store_true",
        help=f"with --labels: give clusters of at least {RULE_MIN_NODES} nodes a gate of their own, first a copy of "
        "the gate (mara_agents.mara.input_grafts.split_gate; a checkpoint split already keeps its own), and fit only "
        "that one: clusters below play exactly as the checkpoint's",
    )
    parser.add_argument(
        "--teach-only",
        metavar="WORKLOAD,LO-HI[,WEIGHT]",
        action="append",
        help="with --labels: keep the teacher's labels only on WORKLOAD slots of LO to HI nodes, counted WEIGHT "
        "times (default 1); repeat it to teach several corners; every other slot is labelled with the checkpoint's "
        "own gate, which the refit then holds (gate_dagger.keep_own_gate)",
    )
    parser.add_argument(
        "--teach-planners-only",
        action="store_true",
        help="with --teach-only: of those slots (every corner's), only the ones the teacher labels with edf and "
        "uniform, not srw",
    )
    parser.add_argument(
        "--hold-weight",
        type=float,
        help="with --teach-only: weigh every slot outside the corners this many times (default 1), so the refit "
        "holds the gate's own weights there harder",
    )
    args = checked_args(parser, ("episodes", "rounds", "steps", "jobs"))
    if args.hold_weight is None:
        args.hold_weight = 1.0
    elif args.teach_only is None:
        parser.error("--hold-weight needs --teach-only")
    try:
        check_hold_weight(args.hold_weight, name="--hold-weight")
    except ValueError as error:
        parser.error(str(error))
    if args.teach_only is not None:
        if args.labels is None:
            parser.error("--teach-only relabels saved --labels (name the labels.npz of an earlier run)")
        args.teach_only = [parse_teach_only(parser, text) for text in args.teach_only]
    elif args.teach_planners_only:
        parser.error("--teach-planners-only needs --teach-only")
    if args.first_episode and args.labels is not None:
        parser.error("--first-episode chooses the scenarios to play: saved --labels play none")
    try:
        check_first_episode(args.first_episode, args.rounds, args.episodes, name="--first-episode")
    except ValueError as error:
        parser.error(str(error))
    for flag in ("graft_gate_context", "graft_gate_rule"):
        if getattr(args, flag) and args.labels is not None:
            name = "--" + flag.replace("_", "-")
            parser.error(f"{name} plays new labels: saved --labels were read by the gate before the graft")
    if args.graft_gate_context and args.graft_gate_rule:
        parser.error("--graft-gate-rule already gives a linear gate --graft-gate-context's layer: name one")
    for flag in ("fit_rule_only", "split_gate"):
        if getattr(args, flag) and args.labels is None:
            name = "--" + flag.replace("_", "-")
            parser.error(f"{name} refits on saved --labels (name the labels.npz of an earlier run)")
    if args.fit_rule_only and args.split_gate:
        parser.error("--fit-rule-only and --split-gate each name the weights to fit: choose one")
    if args.graft_gate_context and args.rule_on_big_clusters:
        parser.error("--rule-on-big-clusters limits a gate that reads the rule: --graft-gate-context gives none")
    return args


def parse_teach_only(parser: argparse.ArgumentParser, text: str) -> Corner:
    """``WORKLOAD,LO-HI[,WEIGHT]`` as a :class:`Corner`; a usage error naming what is allowed otherwise."""
    workload, _, rest = text.partition(",")
    nodes, _, weight = rest.partition(",")
    try:
        low, high = parse_node_range(nodes)
        if high is None:  # "N" alone means N or more nodes: a corner needs both ends
            raise ValueError(nodes)
        return Corner(workload, low, high, float(weight) if weight else 1.0)
    except ValueError:
        parser.error(
            f"--teach-only wants WORKLOAD,LO-HI[,WEIGHT] (a registered workload: {', '.join(sorted(WORKLOADS))};"
            f" nodes 1 <= LO <= HI; a finite weight > 0, default 1), got {text!r}"
        )


def checked_args(parser: argparse.ArgumentParser, counts: tuple[str, ...]) -> argparse.Namespace:
    """The parsed arguments; a usage error for a count below 1, a step that is not > 0, or an ``--out``
    that would replace the checkpoint's own ``checkpoint.pt``."""
    args = parser.parse_args()
    for name in counts:
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be >= 1, got {getattr(args, name)}")
    if not args.learning_rate > 0:
        parser.error(f"--learning-rate must be > 0, got {args.learning_rate}")
    if args.out.resolve() == args.checkpoint.resolve().parent:
        parser.error("--out must not be the checkpoint's directory (its checkpoint.pt would be replaced)")
    return args


def training_config(train_args: str):
    """The PPOConfig ``examples/train_mara.py TRAIN_ARGS`` would train with (its teacher and scenarios)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import train_mara

    saved = sys.argv
    try:
        sys.argv = ["train_mara.py", *shlex.split(train_args)]
        return train_mara.configure(train_mara.parse_args())
    finally:
        sys.argv = saved


def main() -> None:
    args = parse_args()
    net, env, extra = load_checkpoint(args.checkpoint)
    net, changed = network_to_fit(net, args)
    if args.labels is not None:  # a refit: no play, one fit
        if args.fit_rule_only and not net.config.get("gate_rule"):
            raise SystemExit(f"--fit-rule-only: {args.checkpoint}'s gate does not read the rule (gate_rule)")
        try:
            labels = joined_labels(net, args.labels)
            named = ",".join(map(str, args.labels))
            fitted = refit_on_labels(
                net, labels, args.teach_only, args.teach_planners_only, args.hold_weight, args.steps,
                args.learning_rate, args.fit_rule_only, args.split_gate,
            )  # fmt: skip
            rounds = [{"labels": named, **fitted}]
        except ValueError as error:
            raise SystemExit(f"--labels: {error}") from None
        args.out.mkdir(parents=True, exist_ok=True)  # only once the refit worked: a refusal leaves nothing
        save_checkpoint(net, args.out / "checkpoint.pt", env, {**extra, "gate_refit": named})
    else:
        config = training_config(args.train_args)
        if config.teacher is None:
            raise SystemExit(f"--train-args {args.train_args!r} names no teacher: nothing labels the gate")
        args.out.mkdir(parents=True, exist_ok=True)  # only now: a refusal above leaves nothing
        player = save_checkpoint(net, args.out / "grafted.pt", env, extra) if changed else args.checkpoint
        rounds = dagger_rounds(
            net, player, config.env, config.teacher, config.scenarios, args.out / "checkpoint.pt",
            args.rounds, args.episodes, args.steps, args.learning_rate, args.jobs, labels_to=args.out / "labels.npz",
            first_episode=args.first_episode,
        )  # fmt: skip
    recorded = {"first_episode": args.first_episode} if args.first_episode else {}  # a play; never with --labels
    flags = ("rule_on_big_clusters", "fit_rule_only", "split_gate")
    recorded.update({flag: True for flag in flags if getattr(args, flag)})
    if args.teach_only is not None:  # a --labels refit
        corners = [str(corner) for corner in args.teach_only]
        recorded.update(teach_only=corners, teach_planners_only=args.teach_planners_only, hold_weight=args.hold_weight)
    write_report(args, rounds, "fitted gate", recorded)


def network_to_fit(net: SlotMARANet, args: argparse.Namespace) -> tuple[SlotMARANet, bool]:
    """``net`` with the graft and the limit ``args`` ask for (a usage error naming the checkpoint if it cannot
    take them), and whether it differs from the checkpoint's (a play then saves it as ``grafted.pt``)."""
    graft = graft_gate_rule if args.graft_gate_rule else graft_gate_context if args.graft_gate_context else None
    if graft is not None:
        name = "--graft-gate-rule" if args.graft_gate_rule else "--graft-gate-context"
        try:
            net = graft(net)
        except (ValueError, AttributeError) as error:
            raise SystemExit(f"{name}: {args.checkpoint} cannot take it ({error})") from None
    if args.rule_on_big_clusters:
        try:
            net = rule_on_big_clusters(net)
        except ValueError as error:
            raise SystemExit(f"--rule-on-big-clusters: {args.checkpoint} cannot take it ({error})") from None
    if args.split_gate and not net.config.get("split_gate"):
        try:
            net = split_gate(net)
        except ValueError as error:
            raise SystemExit(f"--split-gate: {args.checkpoint} cannot take it ({error})") from None
    return net, graft is not None or args.rule_on_big_clusters or args.split_gate


def joined_labels(net: SlotMARANet, paths: list[Path]) -> GateLabels:
    """The labels in ``paths``, joined; ``ValueError`` naming a file that cannot be read or that ``net``'s
    gate cannot be fitted on (:meth:`~mara_agents.mara.gate_dagger.GateLabels.check_for`)."""
    parts = []
    for path in paths:
        parts.append(GateLabels.load(path))
        try:
            parts[-1].check_for(net)
        except ValueError as error:
            raise ValueError(f"{path}: {error}") from None
    return GateLabels.concatenate(parts)


def write_report(args: argparse.Namespace, rounds: list[dict], what: str, extra: dict | None = None) -> None:
    """Print each round and write ``report.json`` (with ``extra``'s entries) beside the new ``checkpoint.pt``
    in ``args.out``."""
    for one in rounds:
        print(json.dumps(one))
    report = {"checkpoint": str(args.checkpoint), "train_args": args.train_args, "rounds": rounds, **(extra or {})}
    (args.out / "report.json").write_text(json.dumps(report, indent=1) + "\n")
    print(f"{what}: {args.out / 'checkpoint.pt'}")


if __name__ == "__main__":
    main()
