"""Train the MARA policy from scratch at the ``train`` load (teacher warm start, then PPO + GAE).

    python examples/train_mara.py --quick          # a one-minute smoke run
    python examples/train_mara.py --out runs/mara  # the default configuration

The ablations of docs/mara_policy.md change one thing each:

    --no-shaping                 # completions only, no potential-based progress reward
    --forecaster none|wls|dkf|flow|flow_fixed   # the forecast features the policy reads
    --calibrate-forecasts        # ... scaled within each episode by its finished tasks (opt-in env setting)
    --non-autoregressive         # earlier nodes' choices hidden from the actor
    --teacher none               # pure PPO from random weights (no warm start, no guidance)
    --no-hints                   # (generalist) the slot actor without the srw plan as row features
    --no-warmup                  # (generalist) big clusters on short episodes instead of a planner's warm-up
    --no-mixed-warmup            # (generalist) the teacher plays the warm-up, not srw, edf or uniform
    --no-random-window           # (generalist) big clusters' learned slots at the end of the episode
    --no-pick-hints              # (generalist) the skip paths without the row each planner picks
    --no-uniform-pick            # (generalist) no third skip path on the row uniform picks
    --no-size-context            # (generalist) log2 M left out of the slot's context: blind to the cluster size
    --load-signal                # (slot actor) the slot's context and the critic read the arrival rate too
    --gate-context               # (hinted slot actor) the gate reads the arrival rate and log2 M directly
    --rule-gate                  # (generalist) the gate reads load_switch's path, refitted to follow it on big tabular
    --split-step                 # (generalist) then big clusters get a gate of their own (.split_step)
    --gate-rounds 2              # (hinted slot actor) DAgger on the gate after the warm start (its own play)
    --teacher best               # (generalist) srw labels planned on the teacher's own flow draws
    --max-rows 64                # (generalist) big clusters draw up to 64 table rows, not 128
    --focus rl 24 2.1 3.5 0.15   # (generalist) 15% of episodes: rl, >= 24 nodes, load 2.1-3.5 (default 30%, 0.7-3.5)
    --no-focus                   # (generalist) every scenario drawn from the plain distribution
    --also-focus tabular 24 0.7 3.5 0.15   # (generalist) and 15% more from big tabular clusters
    --no-row-buckets             # (generalist) minibatches drawn across table sizes, padded to the largest
    --guide-floor 0.25           # the teacher's cross-entropy never falls below this weight
    --guide-where-trailing       # (with --guide-floor) ... only on scenario kinds the teacher still leads
    --guide-where-trailing best_single   # ... where the best single candidate of the kind leads
    --guide-floor-min-nodes 24   # (with --guide-floor) ... only on clusters of at least 24 nodes
    --explore-nodes 4            # about 4 node turns per slot sample in PPO rollouts, the rest play greedily
    --gate-coef 0                # (generalist) do not fit the gate to the planner the teacher follows (default 0.5)
    --gate-floor 0.25            # with a gate loss: its weight never falls below this in PPO
    --warm-start-from runs/a     # start PPO from runs/a/warm_start.pt instead of cloning anew (same settings)

Writes ``OUT/log.csv`` (and TensorBoard logs if TensorBoard is installed), ``OUT/checkpoint.pt``
(weights only), ``OUT/warm_start.json`` and ``OUT/config.json``.
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

from mara_agents.mara.action_dagger import check_action_settings
from mara_agents.mara.exploration import check_explore_nodes
from mara_agents.mara.guidance import EPISODE_BEST, LEADS, check_floor_min_nodes, check_guide_settings
from mara_agents.mara.ppo import PPOConfig, train
from mara_agents.mara.scenarios import GENERALIST_MAX_ROWS, ScenarioFocus, ScenarioSampler
from mara_agents.mara.teacher import BEST_TEACHERS, GENERALIST_TEACHER, TEACHERS, parse_teacher
from mara_agents.mara.warm_start import load_warm_start
from mara_env.forecast import FORECASTERS

# The slot actor clones slower than the joint one: on 12 srw episodes at 8 nodes, 4 epochs left its
# greedy play idle at every turn (completion 0.0), 12 epochs gave 0.51-0.71 (docs/mara_policy.md).
SLOT_WARM_START_EPOCHS = 12
# With planner hints the slot actor clones srw to 94% agreement in 4 epochs of 10 episodes (99.7% in 6
# epochs of 40); the generalist clones the "best" teacher (srw or edf, episode by episode). With the size
# context it needs the wider draw: 60 episodes held only 11 on 2-5 nodes and lost small clusters, 120 in
# 2 epochs (the same number of cloning steps) kept them (docs/mara_policy.md, the forty-eighth run);
# 180 closed 3 more cells of the generalisation table, on big rl and tabular clusters (the fiftieth run).
GENERALIST_WARM_START = (180, 2)  # (episodes, epochs)
GENERALIST_TURNS = 200_000
# The generalist reads flow forecasts with common random numbers: a task's forecast is a function of its
# history alone, so it does not jitter from slot to slot; +3.4 points over plain flow on 36 hard-forecast
# test cells and 0.723 against 0.702 on validation seeds (docs/mara_policy.md).
GENERALIST_FORECASTER = "flow_fixed"
# The default --generalist run's focus and gate loss (the forty-third run, docs/mara_policy.md): 30% of its
# episodes are rl on 24+ nodes at loads 0.7-3.5, where edf_uniform alone teaches, and the gate is fitted
# to the planner the teacher follows at each turn with weight 0.5.
GENERALIST_FOCUS = ScenarioFocus("rl", min_nodes=24, loads=(0.7, 3.5), share=0.3)
GENERALIST_GATE_COEF = 0.5
GENERALIST_RULE_GATE = True  # the rule-gate step after the warm start (--rule-gate; the sixty-seventh run)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="a one-minute smoke run on short episodes")
    parser.add_argument("--turns", type=int, help="total PPO node turns (default: the config's)")
    parser.add_argument("--envs", type=int, help="env copies (default: the config's)")
    parser.add_argument("--processes", type=int, help="worker processes the copies share (default: the config's)")
    parser.add_argument("--teacher", choices=[*TEACHERS, "none"], help="warm-start teacher (default: the config's)")
    parser.add_argument(
        "--teacher-also",
        action="append",
        metavar="AGENT",
        help=(
            "(a best teacher) one more candidate, episode by episode, e.g. mara_generalist:runs/old/checkpoint.pt;"
            " AGENT@N: only on clusters of at most N nodes; AGENT~WORKLOAD,N,LOAD: AGENT alone on WORKLOAD episodes"
            " with at least N nodes (LO-HI: LO to HI nodes) and an offered load of at least LOAD, e.g."
            " uniform~rl,24,2.1 or edf_uniform~tabular,2-16,0.7"
        ),
    )
    parser.add_argument("--warm-start-episodes", type=int, help="teacher episodes to clone (default: the config's)")
    parser.add_argument(
        "--warm-start-epochs", type=int, help="cloning epochs (default: the config's; 12 for the slot actor)"
    )
    parser.add_argument(
        "--rule-gate",
        action=argparse.BooleanOptionalAction,
        help="(--generalist) after the warm start, a copy whose gate also reads the path load_switch's rule names "
        "and is refitted on its own play to follow it on big tabular clusters, held to its own weights elsewhere "
        "(mara_agents.mara.rule_gate_refit; written as OUT/warm_start_rule_gate.pt; the run goes on with it) "
        f"(default: {'on with --generalist, off with --quick' if GENERALIST_RULE_GATE else 'off'})",
    )
    parser.add_argument(
        "--split-step",
        action="store_true",
        help="(with the rule-gate step) then give clusters of at least 17 nodes a gate of their own, taught on big "
        "tabular, rl and mixed, small clusters keeping the step's gate with the rule read on big clusters only "
        "(mara_agents.mara.split_step; written as OUT/warm_start_split.pt; the run goes on with it)",
    )
    parser.add_argument(
        "--gate-rounds",
        type=int,
        help="(hinted slot actor, best teacher) after the warm start, rounds of DAgger on the gate alone: the "
        "policy plays, the teacher labels each slot's planner, the gate is refitted (default: 0, none)",
    )
    parser.add_argument(
        "--gate-episodes", type=int, help="scenarios the policy plays per gate round (default: the config's, 200)"
    )
    parser.add_argument(
        "--action-rounds",
        type=int,
        help="after the warm start (and any gate rounds), rounds of DAgger on every turn: the policy plays, the "
        "teacher labels each of its turns, the network is refitted by cloning (default: 0, none)",
    )
    parser.add_argument(
        "--action-episodes", type=int, help="scenarios the policy plays per action round (default: the config's, 100)"
    )
    parser.add_argument("--action-epochs", type=int, help="cloning epochs per action round (default: the config's, 2)")
    parser.add_argument(
        "--action-focus",
        nargs=5,
        metavar=("WORKLOAD", "MIN_NODES", "LOAD_LOW", "LOAD_HIGH", "SHARE"),
        help="(--generalist) one more focus of the scenarios the action rounds play, as --also-focus (the warm "
        "start and PPO keep theirs)",
    )
    parser.add_argument(
        "--forecaster",
        choices=["none", *(name for name in FORECASTERS if name != "oracle")],  # the oracle would be cheating
        help=f"the policy's forecast features (default: the config's, {GENERALIST_FORECASTER} with --generalist)",
    )
    parser.add_argument(
        "--calibrate-forecasts",
        action="store_true",
        help="train (and evaluate) on envs with calibrate_forecasts=True: each episode's forecasts scaled by the "
        "work its finished tasks needed (docs/forecasters.md); the checkpoint then asks for it",
    )
    parser.add_argument("--no-shaping", action="store_true", help="train on completions alone")
    parser.add_argument("--non-autoregressive", action="store_true", help="hide earlier nodes' choices from the actor")
    parser.add_argument(
        "--no-hints", action="store_true", help="(--generalist) do not give the actor the srw plan of each slot"
    )
    parser.add_argument(
        "--no-warmup",
        action="store_true",
        help="(--generalist) shorten big clusters' episodes instead of letting a planner play their first slots",
    )
    parser.add_argument(
        "--mixed-warmup",
        action=argparse.BooleanOptionalAction,
        help="(--generalist) srw, edf or uniform, drawn per episode, plays big clusters' first slots instead of the "
        "teacher, so the state the learner takes over does not tell which candidate labels the episode (default: on)",
    )
    parser.add_argument(
        "--random-window",
        action=argparse.BooleanOptionalAction,
        help="(--generalist) big clusters' learned slots start at a random slot, not at the end, and the episode "
        "is cut where they end, the rest valued by the critic: the learner meets every time of an episode "
        "(default: on)",
    )
    parser.add_argument(
        "--no-pick-hints",
        action="store_true",
        help="(--generalist) the skip paths do not read the row srw and edf pick at each turn",
    )
    parser.add_argument(
        "--uniform-pick",
        action=argparse.BooleanOptionalAction,
        help="(--generalist) a third skip path plays uniform's pick, gated with srw's and edf's by a softmax "
        "(default: on where the pick hints are)",
    )
    parser.add_argument(
        "--size-context",
        action=argparse.BooleanOptionalAction,
        help="(slot actor) the slot's context also holds log2 M, so the policy can tell cluster sizes apart "
        "(a teacher candidate limited to some sizes otherwise teaches a blend; default: on with --generalist, "
        "docs/mara_policy.md, the forty-eighth run)",
    )
    parser.add_argument(
        "--load-signal",
        action="store_true",
        help="(slot actor) the slot's context and the critic also read the arrival_rate global (tasks arrived "
        "per slot so far / M), a slow signal of the offered load (default: off)",
    )
    parser.add_argument(
        "--gate-context",
        action="store_true",
        help="(hinted slot actor) the gate reads the arrival rate and log2 M beside the slot token, through a "
        "tanh layer, so it can switch planners by load on the policy's own states (default: off)",
    )
    parser.add_argument(
        "--rule-start",
        action="store_true",
        help="(--generalist) start the actor's skip paths at srw's and edf's rules, mixed by its gate",
    )
    parser.add_argument(
        "--architecture",
        choices=["joint", "slot"],
        help="actor: joint (a transformer pass per turn) or slot (slot encoded once; fast at scale)",
    )
    parser.add_argument(
        "--generalist",
        action="store_true",
        help="train over a distribution of scenarios (M 2-64, every workload, loads 0.7-3.5, arrivals, speeds, "
        "faults; mara_agents.mara.scenarios) with the slot actor, on seeds no evaluation plays",
    )
    parser.add_argument(
        "--max-rows",
        type=int,
        help=f"(--generalist) the largest K_max a training scenario draws (default {GENERALIST_MAX_ROWS}; every "
        "observation is padded to it, so training slows as it grows)",
    )
    parser.add_argument(
        "--focus",
        nargs=5,
        metavar=("WORKLOAD", "MIN_NODES", "LOAD_LOW", "LOAD_HIGH", "SHARE"),
        help="(--generalist) draw a SHARE of the training episodes from WORKLOAD on clusters of at least "
        "MIN_NODES nodes at a load in [LOAD_LOW, LOAD_HIGH] (mara_agents.mara.scenarios.ScenarioFocus; default "
        f"{GENERALIST_FOCUS.workload} {GENERALIST_FOCUS.min_nodes} {' '.join(map(str, GENERALIST_FOCUS.loads))} "
        f"{GENERALIST_FOCUS.share}, but none with --quick)",
    )
    parser.add_argument("--no-focus", action="store_true", help="(--generalist) no focus: every scenario as drawn")
    parser.add_argument(
        "--also-focus",
        nargs=5,
        action="append",
        metavar=("WORKLOAD", "MIN_NODES", "LOAD_LOW", "LOAD_HIGH", "SHARE"),
        help="(--generalist) one more focus beside --focus (or the default one), with its own SHARE of the "
        "episodes; may be repeated (all shares add up to at most 1)",
    )
    parser.add_argument(
        "--row-buckets",
        action=argparse.BooleanOptionalAction,
        help="train on minibatches of similar table size cut to the rows they use: the same losses, several "
        "times faster on mixed scenarios, but other minibatches (default: on with --generalist, else off)",
    )
    parser.add_argument(
        "--guide-floor",
        type=float,
        help="the teacher cross-entropy's weight never falls below this during PPO (default 0: it anneals to 0 "
        "by half the run, and PPO alone decides the end)",
    )
    parser.add_argument(
        "--guide-where-trailing",
        nargs="?",
        const=EPISODE_BEST,
        choices=LEADS,
        help="(--generalist, with --guide-floor) hold the floor only on the scenario kinds (workload x cluster-size "
        "band) where the best teacher (episode_best, the default: each episode's best candidate; best_single: the "
        "candidate with the highest mean there) completed more than the policy over their last 8 finished episodes",
    )
    parser.add_argument(
        "--guide-floor-min-nodes",
        type=int,
        metavar="M",
        help="(with --guide-floor) hold the floor only on clusters of at least M nodes (default: on every cluster)",
    )
    parser.add_argument(
        "--explore-nodes",
        type=float,
        help="PPO rollouts sample the policy at about this many node turns per slot (chance N/M per turn) and "
        "play its most likely action at the rest; only sampled turns train the actor (default: every turn samples)",
    )
    parser.add_argument(
        "--gate-coef",
        type=float,
        help="(--generalist) weight of a cross-entropy that asks the gate to pick the skip path of the planner "
        "the best teacher follows at each turn (warm start; annealed with the guide in PPO; default "
        f"{GENERALIST_GATE_COEF} with --generalist's teacher and hints, else 0: off)",
    )
    parser.add_argument(
        "--gate-floor",
        type=float,
        help="(with --gate-coef) the gate loss's weight never falls below this during PPO (default 0: it is off "
        "once the guide is)",
    )
    parser.add_argument(
        "--warm-start-from",
        type=Path,
        metavar="RUN",
        help="start PPO from RUN/warm_start.pt and RUN/warm_start.json (a run with the same network and env "
        "settings) instead of cloning the teacher anew; skips the warm start's 20-odd minutes",
    )
    parser.add_argument(
        "--ray",
        nargs="?",
        const="local",
        metavar="ADDRESS",
        help="rollout workers as Ray actors: on a new local Ray, or on the cluster at ADDRESS (same numbers)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--eval-every", type=int, help="iterations between evaluations beside lara")
    parser.add_argument("--out", type=Path, default=Path("runs/mara"))
    return parser.parse_args()


def configure(args: argparse.Namespace) -> PPOConfig:
    config = PPOConfig(seed=args.seed)
    if args.quick:
        config.total_turns, config.rollout_turns, config.num_envs, config.eval_every = 4096, 128, 8, 2
        config.eval_seeds, config.warm_start_episodes, config.warm_start_epochs = 1, 2, 1
        config.env.update(horizon=60, num_nodes=4)
    if args.teacher is not None:
        config.teacher = None if args.teacher == "none" else args.teacher
    if args.forecaster is not None:
        config.env["forecaster"] = args.forecaster
    if args.calibrate_forecasts:
        if config.env.get("forecaster") == "none":
            raise SystemExit("--calibrate-forecasts needs forecasts to calibrate: not with --forecaster none")
        config.env["calibrate_forecasts"] = True
    if args.no_shaping:
        config.env["shaping"] = False
    config.autoregressive = not args.non_autoregressive
    config.ray_address = args.ray
    if args.generalist:
        if args.forecaster is None:
            config.env["forecaster"] = GENERALIST_FORECASTER
        shared = ("shaping", "forecaster", "curve_split", "calibrate_forecasts")
        fixed = {key: config.env[key] for key in shared if key in config.env}
        small = {"nodes": (2, 6), "max_tasks_cap": 24, "turns_per_episode": 240, "horizon": (20, 60)}
        max_rows = GENERALIST_MAX_ROWS if args.max_rows is None and not args.quick else args.max_rows
        sizes = {} if max_rows is None else {"max_tasks_cap": max_rows}
        try:
            sampler = ScenarioSampler(
                fixed=fixed,
                warmup=not args.no_warmup,
                # on unless turned off; refused below if asked for with --no-warmup
                mixed_warmup=args.mixed_warmup is not False and not args.no_warmup,
                random_window=args.random_window is not False and not args.no_warmup,
                **{**(small if args.quick else {}), **sizes},
            )
        except ValueError as error:
            raise SystemExit(f"--max-rows: {error}") from None
        if args.focus is not None:
            sampler = with_setting(sampler, f"--focus {' '.join(args.focus)}", focus=parse_focus(args.focus, "--focus"))
        elif not (args.no_focus or args.quick):
            sampler = dataclasses.replace(sampler, focus=GENERALIST_FOCUS)
        if args.also_focus:
            more = tuple(parse_focus(values, "--also-focus") for values in args.also_focus)
            sampler = with_setting(sampler, "--also-focus", more_foci=more)
        config.scenarios, config.architecture = sampler, "slot"
        config.planner_hints = not args.no_hints and config.env["forecaster"] != "none"
        config.rule_start = args.rule_start and config.planner_hints
        config.pick_hints = not args.no_pick_hints and config.planner_hints
        config.uniform_pick = config.pick_hints if args.uniform_pick is None else args.uniform_pick
        if args.teacher is None:  # episode by episode, the best of srw (on the env's forecasts), edf and more
            config.teacher = GENERALIST_TEACHER
        if not args.quick:  # the generalist schedule: fits 90 minutes on 2 cores (docs/mara_policy.md)
            config.warm_start_episodes, config.warm_start_epochs = GENERALIST_WARM_START
            config.total_turns, config.eval_every = GENERALIST_TURNS, 12
    if args.teacher_also:
        if config.teacher is None or parse_teacher(config.teacher)[0] not in BEST_TEACHERS:
            raise SystemExit(
                f"--teacher-also needs a best teacher ({', '.join(BEST_TEACHERS)}), not {config.teacher!r}"
            )
        config.teacher = "+".join([config.teacher, *args.teacher_also])
        try:  # a clear error now for a candidate that names no agent or a malformed gate or corner
            parse_teacher(config.teacher)
        except ValueError as error:
            raise SystemExit(f"--teacher-also: {error}") from None
    if args.architecture is not None:
        config.architecture = args.architecture
    if args.size_context and config.architecture != "slot":
        raise SystemExit("--size-context is a setting of the slot actor: it needs --generalist or --architecture slot")
    # on by default for the generalist's slot actor (the forty-eighth run's recipe), off otherwise
    default_size_context = args.generalist and config.architecture == "slot"
    config.size_context = default_size_context if args.size_context is None else args.size_context
    if args.load_signal and config.architecture != "slot":
        raise SystemExit("--load-signal is a setting of the slot actor: it needs --generalist or --architecture slot")
    config.load_signal = args.load_signal
    if args.gate_context and not (config.architecture == "slot" and config.planner_hints):
        raise SystemExit("--gate-context feeds the gate of the planners' skip paths: it needs the hinted slot actor")
    config.gate_context = args.gate_context
    for flag, given in (("--mixed-warmup", args.mixed_warmup), ("--random-window", args.random_window)):
        if given and (args.no_warmup or not args.generalist):
            raise SystemExit(f"{flag} shapes the warm-up: it needs --generalist, not --no-warmup")
    if args.focus is not None and not args.generalist:
        raise SystemExit("--focus draws a share of the generalist's scenarios: it needs --generalist")
    if args.also_focus and not args.generalist:
        raise SystemExit("--also-focus draws a share of the generalist's scenarios: it needs --generalist")
    if args.action_focus is not None:
        if not args.generalist:
            raise SystemExit("--action-focus draws a share of the generalist's action rounds: it needs --generalist")
        config.action_focus = parse_focus(args.action_focus, "--action-focus")
    if args.no_focus and not args.generalist:
        raise SystemExit("--no-focus turns off the generalist's focus: it needs --generalist")
    if args.focus is not None and args.no_focus:
        raise SystemExit("--focus and --no-focus contradict each other: give one")
    if args.uniform_pick and not config.pick_hints:
        raise SystemExit("--uniform-pick needs --generalist with its pick hints (no --no-hints, no --no-pick-hints)")
    config.row_buckets = args.generalist if args.row_buckets is None else args.row_buckets
    best = config.teacher is not None and parse_teacher(config.teacher)[0] in BEST_TEACHERS
    if args.gate_coef is None and args.generalist and config.planner_hints and best:
        config.gate_coef = GENERALIST_GATE_COEF
    if args.gate_coef is not None:
        if args.gate_coef < 0 or not config.planner_hints or not best:
            raise SystemExit(
                f"--gate-coef must be >= 0 and needs --generalist with its planner hints and a best teacher "
                f"({', '.join(BEST_TEACHERS)}); got {args.gate_coef} with teacher {config.teacher!r}"
            )
        config.gate_coef = args.gate_coef
    if args.gate_floor is not None:
        if config.gate_coef <= 0 or not 0.0 <= args.gate_floor <= config.gate_coef:
            raise SystemExit(
                f"--gate-floor must lie in [0, the gate loss's weight {config.gate_coef}] and needs a gate loss "
                f"(--generalist's default or --gate-coef); got {args.gate_floor}"
            )
        config.gate_floor = args.gate_floor
    if args.guide_floor is not None:
        if not 0.0 <= args.guide_floor <= config.guide_coef or config.teacher is None:
            raise SystemExit(
                f"--guide-floor must lie in [0, {config.guide_coef}] (the guide's starting weight) and needs a "
                f"teacher; got {args.guide_floor} with teacher {config.teacher!r}"
            )
        config.guide_floor = args.guide_floor
    if args.guide_where_trailing:
        config.guide_where_trailing = args.guide_where_trailing
        try:
            check_guide_settings(config)
        except ValueError as error:
            raise SystemExit(f"--guide-where-trailing: {error}") from None
    if args.guide_floor_min_nodes is not None:
        config.guide_floor_min_nodes = args.guide_floor_min_nodes
        try:
            check_floor_min_nodes(config)
        except ValueError as error:
            raise SystemExit(f"--guide-floor-min-nodes: {error}") from None
    if args.explore_nodes is not None:
        try:
            check_explore_nodes(args.explore_nodes)
        except ValueError as error:
            raise SystemExit(f"--explore-nodes: {error}") from None
        config.explore_nodes = args.explore_nodes
    if args.rule_gate and not args.generalist:
        raise SystemExit("--rule-gate refits the generalist's gate on its scenarios: it needs --generalist")
    # on by default for the generalist, but not --quick's (its 2-6 nodes never reach the rule's big clusters)
    default_rule_gate = GENERALIST_RULE_GATE and args.generalist and not args.quick
    config.rule_gate = default_rule_gate if args.rule_gate is None else args.rule_gate
    if args.split_step and not config.rule_gate:
        raise SystemExit(
            "--split-step splits the rule-gate step's network: it needs the step (--generalist, not --quick)"
        )
    config.split_step = args.split_step
    if args.warm_start_from is not None:
        config.warm_start_from = str(args.warm_start_from)
    if config.architecture == "slot" and not config.planner_hints and not args.quick:
        config.warm_start_epochs = SLOT_WARM_START_EPOCHS
    for option, field in [
        ("turns", "total_turns"),
        ("envs", "num_envs"),
        ("processes", "processes"),
        ("warm_start_episodes", "warm_start_episodes"),
        ("warm_start_epochs", "warm_start_epochs"),
        ("eval_every", "eval_every"),
        ("gate_rounds", "gate_rounds"),
        ("gate_episodes", "gate_episodes"),
        ("action_rounds", "action_rounds"),
        ("action_episodes", "action_episodes"),
        ("action_epochs", "action_epochs"),
    ]:
        if getattr(args, option) is not None:
            setattr(config, field, getattr(args, option))
    try:
        check_action_settings(config)
    except ValueError as error:
        raise SystemExit(f"--action-rounds, --action-episodes, --action-epochs or --action-focus: {error}") from None
    if config.warm_start_from is not None:  # a clear error now, not after the workers start
        try:
            load_warm_start(config)
        except ValueError as error:
            raise SystemExit(f"--warm-start-from: {error}") from None
    return config


def with_setting(sampler: ScenarioSampler, flag: str, **fields) -> ScenarioSampler:
    """``sampler`` with ``fields`` replaced; ``SystemExit`` naming ``flag`` when the sampler refuses them
    (a focus on more nodes than it draws, shares over 1)."""
    try:
        return dataclasses.replace(sampler, **fields)
    except ValueError as error:
        raise SystemExit(f"{flag}: {error}") from None


def parse_focus(values: list[str], flag: str) -> ScenarioFocus:
    """The focus ``WORKLOAD MIN_NODES LOAD_LOW LOAD_HIGH SHARE`` given to ``flag``; ``SystemExit`` naming it
    when a number does not parse or is out of its range."""
    workload, min_nodes, low, high, share = values
    try:
        return ScenarioFocus(workload, int(min_nodes), (float(low), float(high)), float(share))
    except ValueError as error:
        raise SystemExit(f"{flag} {' '.join(values)}: {error}") from None


def main() -> None:
    args = parse_args()
    result = train(configure(args), args.out)
    last = result["history"][-1]
    print(
        f"{last['turns']} turns in {result['seconds']:.0f} s; recent training completion rate "
        f"{last['train_completion_rate']:.3f}; held-out evaluation {last['eval_completion_rate']:.3f} "
        f"(lara {last['lara_completion_rate']:.3f}); checkpoint {args.out / 'checkpoint.pt'}"
    )


if __name__ == "__main__":
    main()
