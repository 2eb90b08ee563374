"""What the in-situ head (``flow_situ``) is worth to the schedulers that read forecasts.

    python benchmarks/situ_gain.py --split val --first-seed 2000000 --out runs/situ_gain_val.md   # choose on these
    python benchmarks/situ_gain.py --out docs/results/situ_gain.md --json docs/results/situ_gain.json

Every agent of ``--agents`` plays each cell (workload x load x M, ``K_max = max(16, 2M)``) twice on
the same seeds: on its own forecaster (``flow`` for ``srw``, ``flow_fixed`` for the generalist) and
on the same forecaster with the in-situ head (``flow_situ``, ``flow_situ_fixed``). ``uniform`` and
``edf``, which read no forecasts, give the best forecast-free scheduler of the cell. Reports the
completion rates and the paired differences (situ - flow, 95% t-interval, in points). With
``--truth`` it also plays ``srw`` on the true remaining work (``forecaster="oracle"``) and the
clairvoyant ``oracle`` scheduler: how much better forecasts could be worth.

``--others SPEC ...`` adds agents played once, as given (any agent spec, e.g. a policy trained on
``flow_situ_fixed``: ``mara:runs/mara_generalist_situ/best.pt``), each compared per cell with the best
of the rest (every ``--agents`` entry on both forecasters, ``uniform``, ``edf``; never the truth
rows), paired by seed. ``--reuse JSON`` takes the rates of a saved ``--json`` run instead of playing
them again, where its split, seeds and horizon are this run's:

    python benchmarks/situ_gain.py --agents srw --others mara:runs/best.pt --reuse docs/results/situ_gain.json
"""

from __future__ import annotations

import argparse
import itertools
import json
import time
from pathlib import Path

import numpy as np
from generalisation import table_size  # the sibling script (benchmarks/ is on sys.path)

import mara_agents
from mara_agents.evaluation import evaluate
from mara_agents.mara.workers import map_forked
from mara_agents.registry import on_forecaster
from mara_agents.stats import format_mean_ci, paired_difference, significance

FORECAST_FREE = ("uniform", "edf")
SITU = {"flow": "flow_situ", "flow_fixed": "flow_situ_fixed"}
TRUTH = {"srw@truth": {"forecaster": "oracle"}, "oracle": {}}  # --truth: plays on the true remaining work


def make_agent(name: str, situ: bool):
    """The registered scheduler ``name``, on its forecaster or on that forecaster's in-situ variant."""
    agent = mara_agents.make(name)
    base = agent.requirements.forecaster or "flow"
    if base not in SITU:
        raise ValueError(f"{name} plays on forecaster {base!r}; the in-situ head refines only {sorted(SITU)}")
    return agent, (SITU[base] if situ else base)


def play(job: tuple) -> tuple[tuple, list[float]]:
    name, situ, workload, load, nodes, seeds, horizon, split = job
    env = dict(workload=workload, load=load, num_nodes=nodes, max_tasks=table_size(nodes), horizon=horizon)
    if situ is None:  # one of --others, played as given
        records = evaluate(name, seeds, curve_split=split, **env)
        return (name, False, workload, load, nodes), [r["completion_rate"] for r in records]
    if name in FORECAST_FREE:
        agent, forecaster = mara_agents.make(name), "none"
    elif name in TRUTH:
        agent, forecaster = mara_agents.make(name.split("@")[0], **TRUTH[name]), "oracle"
    else:
        agent, forecaster = make_agent(name, situ)
        agent = on_forecaster(agent, forecaster)
    records = evaluate(agent, seeds, curve_split=split, forecaster=forecaster, **env)
    return job[:5], [r["completion_rate"] for r in records]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--agents", nargs="+", default=["srw", "mara_generalist"])
    parser.add_argument("--workloads", nargs="+", default=["synthetic", "vision", "rl", "mixed", "charlm", "tabular"])
    parser.add_argument("--loads", nargs="+", default=["train", "heavy", "extreme"])
    parser.add_argument("--sizes", nargs="+", type=int, default=[8, 32])
    parser.add_argument("--seeds", type=int, default=10, help="seeds per cell")
    parser.add_argument("--first-seed", type=int, default=0, help="seeds are first-seed .. first-seed + seeds - 1")
    parser.add_argument("--split", default="test", choices=["train", "val", "test"], help="curve split")
    parser.add_argument("--horizon", type=int, default=300)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--truth", action="store_true", help="also srw on the true remaining work, and the oracle")
    parser.add_argument(
        "--others", nargs="+", default=[], metavar="SPEC", help="agents compared with the best of the rest"
    )
    parser.add_argument("--reuse", type=Path, help="a saved --json run whose rates are taken instead of replayed")
    parser.add_argument("--out", type=Path, help="markdown report (printed either way)")
    parser.add_argument("--json", type=Path, help="every seed's completion rate")
    parser.add_argument("--from-json", type=Path, help="write the report of a saved --json instead of playing")
    args = parser.parse_args()
    if args.from_json:
        return rewrite_report(args.from_json, args.out)
    if min(*args.sizes, args.seeds, args.horizon, args.jobs) < 1 or args.first_seed < 0:
        parser.error("--sizes, --seeds, --horizon and --jobs must be >= 1 and --first-seed >= 0")
    for name in args.agents:
        make_agent(name, True)  # refuse an agent without a refinable forecaster before playing anything
    for spec in args.others:
        try:
            mara_agents.registry.check_spec(spec)
        except ValueError as err:
            parser.error(str(err))
    start = time.time()
    seeds = list(range(args.first_seed, args.first_seed + args.seeds))
    cells = list(itertools.product(args.workloads, args.loads, args.sizes))
    plays = [(a, s) for a in args.agents for s in (False, True)] + [(a, False) for a in FORECAST_FREE]
    plays += [(a, False) for a in TRUTH] if args.truth else []
    plays += [(a, None) for a in args.others]
    jobs = [(a, s, w, load, m, seeds, args.horizon, args.split) for (w, load, m) in cells for (a, s) in plays]
    reused = reusable_rates(args.reuse, args) if args.reuse else {}
    todo = [job for job in jobs if (job[0], bool(job[1]), *job[2:5]) not in reused]
    rates = reused | dict(map_forked(play, todo, args.jobs, desc="situ gain", unit="cell-agent"))
    text = report(rates, cells, args, time.time() - start)
    print(text)
    if args.out:
        args.out.write_text(text)
    if args.json:
        rows = [
            {"agent": k[0], "situ": k[1], "workload": k[2], "load": k[3], "nodes": k[4], "rates": v}
            for k, v in rates.items()
        ]
        command = vars(args) | {
            "out": str(args.out),
            "json": str(args.json),
            "from_json": None,
            "reuse": str(args.reuse),
        }
        args.json.write_text(json.dumps({"command": command, "seconds": time.time() - start, "rows": rows}))


def reusable_rates(path: Path, args: argparse.Namespace) -> dict[tuple, list[float]]:
    """The rates of a saved ``--json`` run, keyed as :func:`play` keys them; ``SystemExit`` naming the
    setting that differs when its episodes are not this run's."""
    try:
        saved = json.loads(path.read_text())
        command, rows = saved["command"], saved["rows"]
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise SystemExit(f"--reuse {path}: not a situ_gain.py --json file ({type(err).__name__}: {err})") from None
    for setting in ("split", "first_seed", "seeds", "horizon"):
        if command.get(setting) != getattr(args, setting):
            raise SystemExit(
                f"--reuse {path}: its {setting} is {command.get(setting)!r}, this run's {getattr(args, setting)!r}"
            )
    return {(r["agent"], r["situ"], r["workload"], r["load"], r["nodes"]): r["rates"] for r in rows}


def rewrite_report(path: Path, out: Path | None) -> None:
    """The report of a run saved with ``--json`` (its arguments and rates), printed and written to ``out``."""
    saved = json.loads(path.read_text())
    args = argparse.Namespace(**saved["command"])
    rates = {(r["agent"], r["situ"], r["workload"], r["load"], r["nodes"]): r["rates"] for r in saved["rows"]}
    cells = list(itertools.product(args.workloads, args.loads, args.sizes))
    text = report(rates, cells, args, saved["seconds"])
    print(text)
    if out:
        out.write_text(text)


def report(rates: dict, cells: list, args: argparse.Namespace, seconds: float) -> str:
    others = getattr(args, "others", [])  # absent from runs saved before --others
    head = " | ".join(f"{a} flow | {a} situ | {a} situ - flow" for a in args.agents)
    truth = list(TRUTH) if args.truth else []
    head += "".join(f" | {a}" for a in truth)
    lines = [
        "# The in-situ head's worth to the schedulers that read forecasts",
        "",
        f"`python benchmarks/situ_gain.py --agents {' '.join(args.agents)} --workloads {' '.join(args.workloads)} "
        f"--loads {' '.join(args.loads)} --sizes {' '.join(map(str, args.sizes))} --seeds {args.seeds} "
        f"--first-seed {args.first_seed} --split {args.split}{' --truth' if args.truth else ''}"
        f"{' --others ' + ' '.join(others) if others else ''}"
        f"{f' --reuse {args.reuse}' if getattr(args, 'reuse', None) not in (None, 'None') else ''}`: "
        f"{args.split} curves, seeds {args.first_seed}..{args.first_seed + args.seeds - 1}, {args.horizon} slots, "
        f"Poisson arrivals; {seconds:.0f} s. Completion rates; differences paired by seed in points (95% t-interval).",
        "",
        f"| workload | load | M | best of uniform/edf | {head} |",
        "|---|---|---|---|" + "---|---|---|" * len(args.agents) + "---|" * len(truth),
    ]
    gains: dict[str, list[float]] = {a: [] for a in args.agents}
    for w, load, m in cells:
        free = max(FORECAST_FREE, key=lambda a: np.mean(rates[(a, False, w, load, m)]))
        row = [w, load, str(m), f"{free} {np.mean(rates[(free, False, w, load, m)]):.3f}"]
        for a in args.agents:
            flow, situ = rates[(a, False, w, load, m)], rates[(a, True, w, load, m)]
            diff = paired_difference(situ, flow)
            gains[a].append(diff["mean"])
            row += [
                f"{np.mean(flow):.3f}",
                f"{np.mean(situ):.3f}",
                format_mean_ci(diff, digits=1, scale=100, signed=True, unit=" pp"),
            ]
        row += [f"{np.mean(rates[(a, False, w, load, m)]):.3f}" for a in truth]
        lines.append("| " + " | ".join(row) + " |")
    lines.append("")
    for a in args.agents:
        lines.append(f"- `{a}`: situ - flow averages {100 * np.mean(gains[a]):+.1f} points over {len(cells)} cells.")
    if truth:
        mean = {a: np.mean([np.mean(rates[(a, False, *cell)]) for cell in cells]) for a in ("srw", *truth)}
        lines.append(
            f"- mean over the cells: `srw` on `flow` {mean['srw']:.3f}, on the truth {mean['srw@truth']:.3f}; "
            f"the `oracle` scheduler {mean['oracle']:.3f}."
        )
    lines += against_the_rest(rates, cells, args)
    return "\n".join(lines) + "\n"


def against_the_rest(rates: dict, cells: list, args: argparse.Namespace) -> list[str]:
    """Report lines for ``--others``: each one's rate per cell and its paired difference with the best
    (by mean) of the rest of the cell: every ``--agents`` entry on both forecasters, ``uniform``, ``edf``."""
    others = getattr(args, "others", [])  # absent from runs saved before --others
    if not others:
        return []
    rest = [(a, s) for a in args.agents for s in (False, True)] + [(a, False) for a in FORECAST_FREE]
    label = {(a, s): f"{a}{' situ' if s else ''}" for a, s in rest}
    head = " | ".join(f"{o} | {o} - best" for o in others)
    lines = ["", "## Against the best of the rest", ""]
    lines += [f"| workload | load | M | best of the rest | {head} |", "|---|---|---|---|" + "---|---|" * len(others)]
    diffs: dict[str, list[dict]] = {o: [] for o in others}
    for w, load, m in cells:
        best = max(rest, key=lambda key: np.mean(rates[(*key, w, load, m)]))
        reference = rates[(*best, w, load, m)]
        row = [w, load, str(m), f"{label[best]} {np.mean(reference):.3f}"]
        for o in others:
            diff = paired_difference(rates[(o, False, w, load, m)], reference)
            diffs[o].append(diff)
            row += [f"{np.mean(rates[(o, False, w, load, m)]):.3f}", format_mean_ci(diff, 1, 100, True, " pp")]
        lines.append("| " + " | ".join(row) + " |")
    lines.append("")
    for o in others:
        signs = [significance(d) for d in diffs[o]]
        lines.append(
            f"- `{o}` - best of the rest averages {100 * np.mean([d['mean'] for d in diffs[o]]):+.1f} points over "
            f"{len(cells)} cells; significantly above in {signs.count(1)}, below in {signs.count(-1)}."
        )
    return lines


if __name__ == "__main__":
    main()
