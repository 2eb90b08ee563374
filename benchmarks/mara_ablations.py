"""MARA ablations: train each variant with one thing changed, then evaluate it on the test seeds.

    python benchmarks/mara_ablations.py --turns 600000 --seeds 20 --out runs/ablations \\
        --report docs/results/mara_ablations.md

Variants (each a change to the default ``PPOConfig``; ``full`` is the default itself at this budget):
``no_shaping`` (completions only), ``forecaster_none`` / ``forecaster_wls`` (the policy's forecast
features; the teacher keeps its own ``flow`` forecasts), ``non_autoregressive`` (earlier nodes'
choices hidden from the actor) and ``no_teacher`` (pure PPO from random weights). A variant whose
``OUT/NAME/checkpoint.pt`` exists is not trained again. Each checkpoint is evaluated greedily on test
curves, seeds ``0..SEEDS-1``, ``synthetic`` at the ``train`` load, by ``mara bench`` (agents
``mara:OUT/NAME/checkpoint.pt``, resumable in ``OUT/bench``); the report also gives the warm start's
score on the evaluation seeds and the training time.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from pathlib import Path

from mara_agents.bench import BenchConfig, cell_records, run_bench
from mara_agents.mara.ppo import PPOConfig, train
from mara_agents.stats import format_table, summarize

VARIANTS: dict[str, Callable[[PPOConfig], None]] = {
    "full": lambda c: None,
    "no_shaping": lambda c: c.env.update(shaping=False),
    "forecaster_none": lambda c: c.env.update(forecaster="none"),
    "forecaster_wls": lambda c: c.env.update(forecaster="wls"),
    "non_autoregressive": lambda c: setattr(c, "autoregressive", False),
    "no_teacher": lambda c: setattr(c, "teacher", None),
}


def run_variant(name: str, turns: int, out: Path) -> dict:
    """Train ``name`` unless its checkpoint exists; its training time and warm-start figures."""
    folder = out / name
    if not (folder / "checkpoint.pt").is_file():
        config = PPOConfig(total_turns=turns)
        VARIANTS[name](config)
        began = time.perf_counter()
        train(config, folder)
        (folder / "seconds.txt").write_text(f"{time.perf_counter() - began:.0f}\n")
    warm = folder / "warm_start.json"
    return {
        "seconds": float((folder / "seconds.txt").read_text()),
        "warm_start_eval": json.loads(warm.read_text()).get("eval_completion_rate") if warm.is_file() else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=600_000, help="PPO node turns per variant")
    parser.add_argument("--seeds", type=int, default=20, help="test seeds per evaluation")
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    parser.add_argument("--out", type=Path, default=Path("runs/ablations"))
    parser.add_argument("--report", type=Path)
    parser.add_argument("--horizon", type=int, default=300, help="slots per evaluation episode (smoke runs)")
    parser.add_argument("--jobs", type=int, default=2, help="worker processes for the evaluation")
    args = parser.parse_args()
    infos = {name: run_variant(name, args.turns, args.out) for name in args.variants}
    agents = {name: f"mara:{args.out / name / 'checkpoint.pt'}" for name in args.variants}
    config = BenchConfig(tuple(agents.values()), ("synthetic",), ("train",), args.seeds, horizon=args.horizon)
    result = run_bench(config, args.out / "bench", jobs=args.jobs)
    if result.failures:
        raise SystemExit("failed cells:\n" + "\n".join(e["message"].splitlines()[0] for e in result.failures))
    records = cell_records(args.out / "bench")
    rows = []
    for name, info in infos.items():
        rate = summarize(records[(agents[name], "synthetic", "train")])["completion_rate"]
        warm = "n/a" if info["warm_start_eval"] is None else f"{info['warm_start_eval']:.3f}"
        rows.append([name, rate, warm, f"{info['seconds'] / 60:.0f} min"])
    header = ["variant", "completion rate (greedy)", "warm start (5 val seeds)", "training time"]
    text = (
        f"Each variant: the default configuration with one change, {args.turns:,} PPO node turns; "
        f"evaluated greedily on test curves, seeds 0..{args.seeds - 1}, `synthetic` at the `train` load "
        f"(mean ± 95% CI).\n\n" + format_table(header, rows) + "\n"
    )
    print(text)
    if args.report:
        args.report.parent.mkdir(parents=True, exist_ok=True)
        args.report.write_text(text)


if __name__ == "__main__":
    main()
