"""The split step on a finished rule-gate step: big clusters get a gate of their own, small ones keep theirs.

    python examples/split_step.py --run runs/g72 --out runs/g72_split \\
        --train-args "--generalist --teacher best_shared --teacher-also uniform ..."

``--run`` is the directory of an ``examples/train_mara.py --generalist`` run that made its rule-gate step
(it holds ``rule_gate_player.pt`` and ``warm_start_rule_gate_labels.npz``; the run may have been stopped
after the step). ``--train-args`` are that run's flags: they give the teacher and the scenarios of the
one play. What a run with ``--split-step`` does after its rule-gate step, on its own
(``mara_agents.mara.split_step``): the gate reads the rule on clusters of at least 17 nodes only and is
refitted as the step's; a split copy is taught big ``tabular`` and ``rl``, plays 150 big ``rl``
scenarios, and a second split copy is fitted on both label sets with big ``mixed`` taught too. Writes
into ``--out``: ``checkpoint.pt`` (the split network, recording the run's settings with the split step on),
``report.json`` (each part's slots, agreement
before and after, seconds), each part's network and the play's labels. About 15 minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

# the play processes each run one episode at a time: numpy's BLAS gets one thread in each (set before numpy
# loads; a variable you set is kept)
for _variable in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tune_gate import training_config  # noqa: E402

from mara_agents.mara.checkpoint import load_checkpoint, save_checkpoint  # noqa: E402
from mara_agents.mara.split_step import split_step  # noqa: E402

STEP_FILES = ("rule_gate_player.pt", "warm_start_rule_gate_labels.npz")  # what the rule-gate step left


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--run", type=Path, required=True, help="a generalist run's directory, after its rule-gate step"
    )
    parser.add_argument("--out", type=Path, required=True, help="directory for checkpoint.pt, report.json and parts")
    parser.add_argument(
        "--train-args",
        default="--generalist",
        help="the train_mara.py flags of the run, one string (default: --generalist)",
    )
    parser.add_argument("--jobs", type=int, default=2, help="processes that play episodes (default 2)")
    args = parser.parse_args()
    missing = [name for name in STEP_FILES if not (args.run / name).is_file()]
    if missing:
        parser.error(f"--run {args.run} holds no finished rule-gate step (missing {', '.join(missing)})")
    if args.jobs < 1:
        parser.error(f"--jobs must be >= 1, got {args.jobs}")
    if args.out.resolve() == args.run.resolve():
        parser.error("--out must not be the run's directory (the run's own files would be replaced)")
    return args


def split_record(run: Path) -> dict:
    """What the split network records: the run's settings (from its ``warm_start_rule_gate.pt``, with the split
    step on), as the same run with ``--split-step`` would record them, and the run it came from."""
    record: dict = {"split_step": str(run)}
    if (run / "warm_start_rule_gate.pt").is_file():
        extra = load_checkpoint(run / "warm_start_rule_gate.pt")[2]
        if "config" in extra:
            record.update(config={**extra["config"], "split_step": True}, iteration=0)
    return record


def main() -> None:
    args = parse_args()
    config = training_config(args.train_args)
    if config.teacher is None or config.scenarios is None:
        raise SystemExit(f"--train-args {args.train_args!r}: the split step needs a teacher and --generalist")
    player, labels = (args.run / name for name in STEP_FILES)
    try:
        net, report = split_step(player, labels, config.env, config.teacher, config.scenarios, args.out, args.jobs)
    except ValueError as error:
        raise SystemExit(f"--run {args.run}: {error}") from None
    save_checkpoint(net, args.out / "checkpoint.pt", config.env, split_record(args.run))
    record = {"run": str(args.run), "train_args": args.train_args, "parts": report}
    (args.out / "report.json").write_text(json.dumps(record, indent=1) + "\n")
    for part in report:
        print(json.dumps(part))
    print(f"split network: {args.out / 'checkpoint.pt'}")


if __name__ == "__main__":
    main()
