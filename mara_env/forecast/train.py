"""Train the flow forecaster on the training splits of the curve banks.

    python -m mara_env.forecast.train --banks all --steps 16000 --synthetic-share 0.3 --share vision=0.15 rl=0.15 \
        --augment 1 --seed 0

(these are the defaults: the recipe of the shipped weights).

Only ``train`` splits are fitted; the ``val`` splits give the printed validation loss and the
conformal calibration of the quantiles (:mod:`mara_env.forecast.calibration`); the ``test`` splits
are never read. Examples are drawn on the fly: a curve (optionally augmented, see
:mod:`mara_env.forecast.augment`), an observation stride, a prefix end, the prefix's last ``PREFIX``
observed points, and the future best-loss trajectory on the flow's grid (points past the end of the
recording are masked out of the loss). Weights go to ``--out`` (default ``runs/flow/flow.pt``); the
shipped file is replaced only with ``--install``.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
from tqdm.auto import tqdm

from mara_env.forecast.augment import RANGES, WIDE
from mara_env.forecast.flow import WEIGHTS
from mara_env.forecast.flow_net import FlowNet, save_flow_net
from mara_env.forecast.sampler import TrajectorySampler
from mara_env.workloads.recorded import BANK_NAMES, load_bank

ALL_BANKS = tuple(b for b in BANK_NAMES if b != "mixed")
DEFAULT_OUT = Path("runs") / "flow" / "flow.pt"


def flow_matching_loss(net: FlowNet, cond: torch.Tensor, z: torch.Tensor, mask: torch.Tensor, gen: torch.Generator):
    """Rectified flow: regress ``v(x_t, t)`` on ``z - noise`` along the straight path, masked."""
    noise = torch.randn(z.shape, generator=gen)
    t = torch.rand((z.shape[0], 1), generator=gen)
    x_t = (1.0 - t) * noise + t * z
    v = net.velocity(x_t, t, net.condition(cond))
    return (((v - (z - noise)) ** 2) * mask).sum() / mask.sum().clamp(min=1.0)


def curves_of(
    banks: Sequence[str], split: str, synthetic_share: float | None = None, shares: dict[str, float] | None = None
) -> list[np.ndarray]:
    """The loss curves of ``split`` of every bank, repeated so that each bank has a set share of them.

    By default every bank is weighted equally; ``shares`` fixes the share of named banks (the others
    split the rest equally), and ``synthetic_share`` is shorthand for ``{"synthetic": share}``.
    """
    per_bank = {b: list(load_bank(b).split(split).losses) for b in banks}
    shares = dict(shares or {})
    if synthetic_share:
        shares.setdefault("synthetic", synthetic_share)
    shares = {b: f for b, f in shares.items() if b in per_bank}
    rest = [b for b in per_bank if b not in shares]
    if (
        any(not 0.0 < f < 1.0 for f in shares.values())
        or sum(shares.values()) > 1.0
        or (rest and sum(shares.values()) >= 1.0)
    ):
        raise ValueError(f"synthetic_share and shares must be in (0, 1) and sum below 1, got {shares}")
    if not shares:
        share_of = {b: 1.0 / len(per_bank) for b in per_bank}
    else:
        left = (1.0 - sum(shares.values())) / max(len(rest), 1)
        share_of = {b: shares.get(b, left) for b in per_bank}
    total = max(len(c) / share_of[b] for b, c in per_bank.items())  # no bank below one copy
    mixed: list[np.ndarray] = []
    for name, curves in per_bank.items():
        mixed += curves * max(1, round(share_of[name] * total / max(len(curves), 1)))
    return mixed


def resolve_banks(banks: Sequence[str], exclude: Sequence[str] = ()) -> list[str]:
    """``banks`` with ``all`` expanded to every bank, minus ``exclude``; ``ValueError`` on unknown names."""
    names = [b for name in banks for b in (ALL_BANKS if name == "all" else (name,))]
    for name in [*names, *exclude]:
        if name not in ALL_BANKS:
            raise ValueError(f"banks must be 'all' or among {ALL_BANKS}, got {name!r}")
    kept = [b for b in dict.fromkeys(names) if b not in exclude]
    if not kept:
        raise ValueError(f"no bank left to train on (banks={list(banks)}, exclude={list(exclude)})")
    return kept


def train(
    banks: Sequence[str],
    steps: int,
    batch: int,
    lr: float,
    seed: int,
    out: Path,
    progress: bool,
    augment_strength: float = 0.0,
    calibrate: str | bool = "head",
    wide: bool = False,
    embed: int = 64,
    synthetic_share: float | None = None,
    shares: dict[str, float] | None = None,
    crossfit_dir: Path = Path("runs") / "holdout",
) -> dict:
    """Train, calibrate and save to ``out``.

    ``calibrate``: ``"head"`` fits the quantile head on cross-fitted forecasts (the leave-one-bank-out
    flows it needs are trained into, or reused from, ``crossfit_dir``); ``"widen"`` (or True) fits the
    older single widening factor on the ``val`` splits; ``"none"`` (or False) stores no calibration.

    ``wide`` selects the wider augmentation ranges; ``embed`` is the prefix encoder's width."""
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    ranges = WIDE if wide else RANGES
    train_data = TrajectorySampler(
        curves_of(banks, "train", synthetic_share, shares), np.random.default_rng(seed), augment_strength, ranges=ranges
    )
    val_data = TrajectorySampler(curves_of(banks, "val"), np.random.default_rng(seed + 1))
    val_batch = val_data.batch(2048)
    net = FlowNet(embed=embed)
    optimiser = torch.optim.AdamW(net.parameters(), lr=lr, weight_decay=1e-4)
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimiser, max_lr=lr, total_steps=steps, pct_start=0.05)
    start, history = time.perf_counter(), []
    bar = tqdm(range(1, steps + 1), desc="flow", disable=not progress)
    for step in bar:
        loss = flow_matching_loss(net, *train_data.batch(batch), gen)
        optimiser.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        optimiser.step()
        schedule.step()
        if step % 500 == 0 or step == steps:
            with torch.no_grad():
                val = float(flow_matching_loss(net, *val_batch, torch.Generator().manual_seed(0)))
            history.append({"step": step, "train_loss": loss.item(), "val_loss": val})
            bar.set_postfix(train=f"{loss.item():.4f}", val=f"{val:.4f}")
    extra = {
        "banks": list(banks),
        "steps": steps,
        "batch": batch,
        "lr": lr,
        "seed": seed,
        "augment": augment_strength,
        "augment_ranges": ranges,
        "synthetic_share": synthetic_share,
        "shares": shares,
        "embed": embed,
        "train_seconds": round(time.perf_counter() - start, 1),
        "history": history,
        "command": " ".join(["python -m mara_env.forecast.train", *sys.argv[1:]]),
    }
    net.eval()
    if calibrate == "head":
        from mara_env.forecast.crossfit import fit_crossfit_head
        from mara_env.forecast.head import to_storable

        head = fit_crossfit_head(net, banks, crossfit_dir, seed=seed, progress=progress)
        extra["calibration"] = to_storable(head)
        extra["crossfit_dir"] = str(crossfit_dir)
    elif calibrate in (True, "widen"):
        from mara_env.forecast.calibration import fit_calibration

        extra["calibration"] = fit_calibration(net, banks, seed=seed)
    elif calibrate not in (False, "none"):
        raise ValueError(f"calibrate must be 'head', 'widen' or 'none', got {calibrate!r}")
    save_flow_net(net, out, extra)
    return extra


def _parse_shares(items: Sequence[str]) -> dict[str, float] | None:
    """``["vision=0.15", ...]`` -> ``{"vision": 0.15}``; ``ValueError`` naming the bad item."""
    shares = {}
    for item in items:
        name, _, value = item.partition("=")
        try:
            shares[name] = float(value)
        except ValueError:
            raise ValueError(f"--share takes BANK=FRACTION items, got {item!r}") from None
    return shares or None


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m mara_env.forecast.train",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--banks", nargs="+", default=["all"], help=f"'all' or among {ALL_BANKS}")
    parser.add_argument("--exclude", nargs="*", default=[], help="banks left out (leave-one-family-out)")
    parser.add_argument("--augment", type=float, default=1.0, help="augmentation strength (0 = none)")
    parser.add_argument(
        "--calibration",
        choices=("head", "widen", "none"),
        default="head",
        help="quantile head on cross-fitted forecasts (default), one widening factor, or none",
    )
    parser.add_argument(
        "--crossfit-dir",
        type=Path,
        default=Path("runs") / "holdout",
        help="where the leave-one-bank-out flows of the quantile head go / are reused (default runs/holdout)",
    )
    parser.add_argument("--wide", action="store_true", help="wider power/floor augmentation ranges")
    parser.add_argument("--embed", type=int, default=64, help="prefix encoder width")
    parser.add_argument("--synthetic-share", type=float, default=0.3, help="share of the synthetic bank (0 = equal)")
    parser.add_argument(
        "--share", nargs="*", default=["vision=0.15", "rl=0.15"], metavar="BANK=F", help="shares of other named banks"
    )
    parser.add_argument("--steps", type=int, default=16000)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1)")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--out", type=Path, default=DEFAULT_OUT, help="weights file (default runs/flow/flow.pt)")
    where.add_argument("--install", action="store_true", help="write over the shipped weights")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    banks = resolve_banks(args.banks, args.exclude)
    out = WEIGHTS if args.install else args.out
    extra = train(
        banks,
        args.steps,
        args.batch,
        args.lr,
        args.seed,
        out,
        not args.quiet,
        args.augment,
        args.calibration,
        args.wide,
        args.embed,
        args.synthetic_share,
        _parse_shares(args.share),
        args.crossfit_dir,
    )
    print(f"wrote {out} after {extra['train_seconds']} s; last {extra['history'][-1]}")
    calibration = extra.get("calibration") or {}
    kind = calibration.get("kind", "widen") if calibration else "none"
    print(f"calibration: {kind}, {calibration.get('cases')} cases")
    return 0


if __name__ == "__main__":
    sys.exit(main())
