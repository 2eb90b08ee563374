"""Train the flow forecaster on the training splits of the curve banks.

    python -m mara_env.forecast.train --banks synthetic vision rl --steps 6000 --seed 0

Only ``train`` splits are fitted; the ``val`` split is used for the printed validation loss; the
``test`` split is never read. Examples are drawn on the fly: a curve, an observation stride, a
prefix end, the prefix's last ``PREFIX`` observed points, and the future best-loss trajectory on the
flow's grid (points past the end of the recording are masked out of the loss).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
from tqdm.auto import tqdm

from mara_env.forecast.flow import PREFIX, WEIGHTS, encode_prefix, future_grid
from mara_env.forecast.flow_net import FlowNet, save_flow_net
from mara_env.workloads.recorded import load_bank

MAX_STRIDE = 16


class TrajectorySampler:
    """Draws (condition, future trajectory, mask) training examples from a list of loss curves."""

    def __init__(self, curves: Sequence[np.ndarray], rng: np.random.Generator) -> None:
        self.raw = [np.asarray(c, dtype=np.float64) for c in curves if len(c) >= 8]
        self.best = [np.minimum.accumulate(c) for c in self.raw]
        self.rng = rng
        self.r = future_grid()

    def example(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        rng = self.rng
        c = int(rng.integers(len(self.raw)))
        raw, best = self.raw[c], self.best[c]
        n = raw.size
        stride = int(rng.integers(1, min(MAX_STRIDE, max(n // 8, 1)) + 1))
        low, high = 2 * stride, max(int(0.8 * n), 2 * stride + 1)
        end = int(math.exp(rng.uniform(math.log(low), math.log(high))))
        index = np.arange(end, 0, -stride)[:PREFIX][::-1]
        cond, log_ref = encode_prefix(index.astype(np.float64), raw[index], float(raw[0]))
        future = np.floor(end * (1.0 + self.r)).astype(np.int64)
        mask = future <= n - 1
        z = np.log(best[np.minimum(future, n - 1)]) - log_ref
        return cond, z.astype(np.float32), mask.astype(np.float32)

    def batch(self, size: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        parts = [self.example() for _ in range(size)]
        return tuple(torch.as_tensor(np.stack(p)) for p in zip(*parts))


def flow_matching_loss(net: FlowNet, cond: torch.Tensor, z: torch.Tensor, mask: torch.Tensor, gen: torch.Generator):
    """Rectified flow: regress ``v(x_t, t)`` on ``z - noise`` along the straight path, masked."""
    noise = torch.randn(z.shape, generator=gen)
    t = torch.rand((z.shape[0], 1), generator=gen)
    x_t = (1.0 - t) * noise + t * z
    v = net.velocity(x_t, t, net.condition(cond))
    return (((v - (z - noise)) ** 2) * mask).sum() / mask.sum().clamp(min=1.0)


def curves_of(banks: Sequence[str], split: str) -> list[np.ndarray]:
    """The loss curves of ``split`` of every bank, each bank weighted equally by repetition."""
    per_bank = [list(load_bank(b).split(split).losses) for b in banks]
    largest = max(len(c) for c in per_bank)
    mixed: list[np.ndarray] = []
    for curves in per_bank:
        mixed += curves * max(1, round(largest / max(len(curves), 1)))
    return mixed


def train(banks: Sequence[str], steps: int, batch: int, lr: float, seed: int, out: Path, progress: bool) -> dict:
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    train_data = TrajectorySampler(curves_of(banks, "train"), np.random.default_rng(seed))
    val_data = TrajectorySampler(curves_of(banks, "val"), np.random.default_rng(seed + 1))
    val_batch = val_data.batch(2048)
    net = FlowNet()
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
        "train_seconds": round(time.perf_counter() - start, 1),
        "history": history,
        "command": " ".join(["python -m mara_env.forecast.train", *sys.argv[1:]]),
    }
    save_flow_net(net, out, extra)
    return extra


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m mara_env.forecast.train",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--banks", nargs="+", default=["synthetic", "vision", "rl"])
    parser.add_argument("--steps", type=int, default=6000)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1)")
    parser.add_argument("--out", type=Path, default=WEIGHTS)
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    extra = train(args.banks, args.steps, args.batch, args.lr, args.seed, args.out, not args.quiet)
    print(f"wrote {args.out} after {extra['train_seconds']} s; last {extra['history'][-1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
