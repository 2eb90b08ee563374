"""The flow's quantile head: calibrated p10/p50/p90 from the flow's raw samples and the prefix.

On curves unlike its training data the flow's sampled remaining work is biased and too narrow, and
its own spread does not say how far off it is. The head is a small network (9 inputs, two hidden
layers of 32, 3 outputs) that reads what is cheap to know about a forecast and predicts the log
quantiles of the true remaining work as offsets from the flow's raw log median:

- ``flow_spread_low``, ``flow_spread_high``: ``ln(p50 / p10)`` and ``ln(p90 / p50)`` of the raw samples;
- ``power_law_gap``, ``power_law_gap_abs``: ``ln(pl / p50)`` (clipped to +-6) and its size, with ``pl``
  the remaining work of a discounted power-law fit to the last :data:`HISTORY` points (weights
  ``DISCOUNT ** age``, no ridge), a second opinion that does well where curves keep falling;
- ``loss_gap``: ``ln(L_ref / target)``, how far the best loss still has to fall (``L_ref`` as the flow's);
- ``loss_progress``: ``ln(L_0 / L_ref)``, how far it has fallen since the untrained loss;
- ``log_noise``: the log of the power-law fit's residual standard deviation;
- ``flow_censored``: the share of samples that never reached the target within the flow's grid;
- ``power_law_slope``: the fitted exponent, clipped to ``[-1, 3]``.

Every input is a ratio of losses or of work, so the head is invariant to the unit of work and to
the scale of the metric. It never sees the work done, the number of points or the fraction of the
need already done. It is trained with the pinball loss on **cross-fitted** forecasts
(:mod:`mara_env.forecast.crossfit`): forecasts on each bank by a flow trained without that bank, so it
learns how wrong the flow is on a kind of curve it has never seen, plus forecasts on the ``val``
splits by the flow it ships with. The samples are then mapped monotonically (piecewise linear in log
space through the three quantiles) so that they agree with the calibrated quantiles.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mara_env.forecast.base import MAX_REMAINING

KIND = "quantile-head"
HISTORY = 64
DISCOUNT = 0.9
QUANTILES = (0.1, 0.5, 0.9)
FEATURES = (
    "flow_spread_low",
    "flow_spread_high",
    "power_law_gap",
    "power_law_gap_abs",
    "loss_gap",
    "loss_progress",
    "log_noise",
    "flow_censored",
    "power_law_slope",
)
HIDDEN = 32


def padded_history(histories: Sequence[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """The last :data:`HISTORY` points of cleaned histories, right-aligned, NaN before them."""
    work = np.full((len(histories), HISTORY), np.nan)
    loss = np.full((len(histories), HISTORY), np.nan)
    for k, (w, ell) in enumerate(histories):
        m = min(w.size, HISTORY)
        work[k, HISTORY - m :], loss[k, HISTORY - m :] = w[-m:], ell[-m:]
    return work, loss


def power_law(work: np.ndarray, loss: np.ndarray, targets: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Discounted least-squares fit of ``ln L = c - b ln w`` per row of padded histories.

    Returns the remaining work to ``targets`` (``MAX_REMAINING`` where the fit is flat or rising),
    the exponent ``b`` and the weighted residual standard deviation."""
    x, y = np.log(work), np.log(loss)
    ok = np.isfinite(x) & np.isfinite(y)
    age = np.arange(HISTORY - 1, -1, -1.0)
    weights = np.where(ok, DISCOUNT**age, 0.0)
    x, y = np.where(ok, x, 0.0), np.where(ok, y, 0.0)
    total = weights.sum(axis=1)
    mx, my = (weights * x).sum(axis=1) / total, (weights * y).sum(axis=1) / total
    dx, dy = x - mx[:, None], y - my[:, None]
    slope = (weights * dx * dy).sum(axis=1) / np.maximum((weights * dx * dx).sum(axis=1), 1e-12)
    noise = np.sqrt((weights * (dy - slope[:, None] * dx) ** 2).sum(axis=1) / total)
    b = -slope
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        log_total = (my + b * mx - np.log(targets)) / b
        reach = np.where(b > 1e-3, np.exp(np.minimum(log_total, 30.0)), np.inf)
    remaining = np.clip(reach - work[:, -1], 1e-3, MAX_REMAINING)
    return remaining, b, noise


def sorted_quantiles(x: np.ndarray, quantiles: Sequence[float] = QUANTILES) -> np.ndarray:
    """Per-row quantiles of row-sorted ``(n, S)`` samples, interpolated as numpy's default rule does."""
    pos = np.asarray(quantiles) * (x.shape[1] - 1)
    lo = np.floor(pos).astype(int)
    hi = np.minimum(lo + 1, x.shape[1] - 1)
    return x[:, lo] + (pos - lo) * (x[:, hi] - x[:, lo])


def head_features(
    work: np.ndarray,
    loss: np.ndarray,
    first_loss: np.ndarray,
    log_ref: np.ndarray,
    targets: np.ndarray,
    samples: np.ndarray,
    censor_at: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """``(n, 9)`` head inputs (:data:`FEATURES`) and the raw log quantiles ``(n, 3)``, from padded
    histories (:func:`padded_history`) and the flow's raw ``(n, S)`` samples **sorted per row**;
    ``censor_at`` is the remaining work a sample reads when it never reaches the target."""
    log_q = np.log(np.maximum(sorted_quantiles(samples), 1e-3))
    remaining, b, noise = power_law(work, loss, targets)
    gap = np.clip(np.log(remaining) - log_q[:, 1], -6.0, 6.0)
    first = np.where(np.isfinite(first_loss) & (first_loss > 0), first_loss, np.exp(log_ref))
    features = np.column_stack(
        [
            log_q[:, 1] - log_q[:, 0],
            log_q[:, 2] - log_q[:, 1],
            gap,
            np.abs(gap),
            log_ref - np.log(targets),
            np.log(first) - log_ref,
            np.log(noise + 1e-4),
            (samples >= 0.95 * censor_at[:, None]).mean(axis=1),
            np.clip(b, -1.0, 3.0),
        ]
    )
    return features, log_q


def apply_head(head: dict, features: np.ndarray, log_median: np.ndarray) -> np.ndarray:
    """``(n, 3)`` calibrated log quantiles (sorted) from the head's parameters (numpy, no torch)."""
    z = (features - head["mean"]) / head["scale"]
    h = _silu(z @ head["w1"].T + head["b1"])
    h = _silu(h @ head["w2"].T + head["b2"])
    out = h @ head["w3"].T + head["b3"]
    mid = out[:, 1]
    offsets = np.column_stack([np.minimum(out[:, 0], mid), mid, np.maximum(out[:, 2], mid)])
    return log_median[:, None] + offsets


def map_samples(samples: np.ndarray, raw_log_quantiles: np.ndarray, log_quantiles: np.ndarray) -> np.ndarray:
    """Move ``(n, S)`` samples monotonically from their log quantiles ``raw_log_quantiles`` so that
    their p10/p50/p90 land on ``log_quantiles``.

    Piecewise linear in log space: below the raw median the log distance is scaled by the ratio of
    the new to the raw lower spread, above it by the ratio of the upper spreads."""
    logs, raw = np.log(np.maximum(samples, 1e-3)), raw_log_quantiles
    below = (log_quantiles[:, 1] - log_quantiles[:, 0]) / np.maximum(raw[:, 1] - raw[:, 0], 1e-3)
    above = (log_quantiles[:, 2] - log_quantiles[:, 1]) / np.maximum(raw[:, 2] - raw[:, 1], 1e-3)
    offset = logs - raw[:, 1:2]
    scale = np.where(offset < 0, below[:, None], above[:, None])
    return np.exp(np.minimum(log_quantiles[:, 1:2] + scale * offset, np.log(MAX_REMAINING)))  # the cap, no overflow


def _silu(x: np.ndarray) -> np.ndarray:
    return x / (1.0 + np.exp(-np.clip(x, -60.0, 60.0)))


def fit_head(
    features: np.ndarray,
    log_median: np.ndarray,
    log_truth: np.ndarray,
    seed: int = 0,
    steps: int = 1500,
    names: Sequence[str] = FEATURES,
    kind: str = KIND,
) -> dict:
    """Train the head with the pinball loss on ``(features, raw log median, log truth)`` rows.

    Returns a calibration dict (``kind``, feature ``names``, numpy parameters, the number of cases);
    the in-situ head (:mod:`mara_env.forecast.situ`) is the same network on its own features."""
    import torch

    from mara_env.torch_threads import torch_threads

    mean, scale = features.mean(axis=0), features.std(axis=0) + 1e-6
    z = torch.as_tensor((features - mean) / scale, dtype=torch.float32)
    y = torch.as_tensor(log_truth - log_median, dtype=torch.float32)[:, None]
    levels = torch.tensor([QUANTILES])
    gen = torch.Generator().manual_seed(seed)
    # the layers' initial weights come from the seed; fork_rng restores the caller's global RNG after
    with torch_threads(1), torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        net = torch.nn.Sequential(
            torch.nn.Linear(features.shape[1], HIDDEN),
            torch.nn.SiLU(),
            torch.nn.Linear(HIDDEN, HIDDEN),
            torch.nn.SiLU(),
            torch.nn.Linear(HIDDEN, 3),
        )
        optimiser = torch.optim.Adam(net.parameters(), lr=3e-3, weight_decay=1e-4)
        for _ in range(steps):
            rows = torch.randint(0, len(z), (1024,), generator=gen)
            error = y[rows] - net(z[rows])
            loss = torch.maximum(levels * error, (levels - 1.0) * error).mean()  # pinball
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
    layers = [m for m in net if isinstance(m, torch.nn.Linear)]
    params = {"mean": mean, "scale": scale}
    for i, layer in enumerate(layers, start=1):
        params[f"w{i}"] = layer.weight.detach().numpy().astype(np.float64)
        params[f"b{i}"] = layer.bias.detach().numpy().astype(np.float64)
    return {"kind": kind, "features": list(names), "cases": int(len(z)), **params}


def to_storable(head: dict) -> dict:
    """The head with its arrays as torch tensors (what a ``weights_only`` file may hold)."""
    import torch

    return {k: torch.as_tensor(v) if isinstance(v, np.ndarray) else v for k, v in head.items()}


def from_stored(head: dict, features: Sequence[str] = FEATURES) -> dict:
    """A stored head with its tensors back as float64 arrays; ``ValueError`` if it is malformed."""
    names = ("mean", "scale", "w1", "b1", "w2", "b2", "w3", "b3")
    if list(head.get("features", [])) != list(features) or any(n not in head for n in names):
        raise ValueError(f"quantile head must name the features {list(features)} and hold {names}")
    out = dict(head)
    for n in names:
        out[n] = np.asarray(head[n], dtype=np.float64)
    return out
