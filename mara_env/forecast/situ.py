"""``flow_situ``: the flow forecaster with a second quantile head fitted where forecasts are used.

The flow and its quantile head (:mod:`mara_env.forecast.head`) are fitted offline, on curve prefixes
cut at fixed fractions of each curve. In the scheduling loop forecasts are asked of every live task
at every slot: short prefixes, long ones, tasks a scheduler starved or crowded. There the flow's
remaining work is off by a median factor of about 1.6 (``docs/forecasters.md``), and a scheduler that
ranks tasks by it, like ``srw``, pays for it: with the true remaining work ``srw`` completes far more.

The in-situ head is the quantile head's network (:func:`mara_env.forecast.head.fit_head`) trained
with the pinball loss on cases recorded **in play**: episodes of the environment on training curves
(:func:`record_cases`), each case a task at a slot, with what the flow answered, what the history
shows, and the true remaining work the simulator knows. It predicts the log p10/p50/p90 of the true
remaining work as offsets from the flow's calibrated log median, from :data:`SITU_FEATURES`, all
ratios of losses or of work (the forecaster stays blind to the unit of work and to the scale of the
metric):

- ``flow_spread_low``, ``flow_spread_high``: ``ln(p50 / p10)``, ``ln(p90 / p50)`` of the flow's answer;
- ``points``: ``ln`` of the number of usable observed points;
- ``loss_gap``, ``best_gap``: ``ln(L_last / target)`` and ``ln(min L / target)``;
- ``loss_progress``: ``ln(L_0 / L_last)``, with ``L_0`` the first observed loss;
- ``power_law_gap``: ``ln(pl / p50)`` (clipped to +-6) with ``pl`` the discounted power-law fit's
  remaining work (:func:`mara_env.forecast.head.power_law`), its exponent and its log residual noise;
- ``recent_slope``: the log-log slope of the last :data:`RECENT` points (clipped to ``[-3, 1]``).

Tasks the flow cannot forecast, has already seen reach the target, or deems out of reach
(median at :data:`~mara_env.forecast.base.MAX_REMAINING`) keep the flow's answer. Samples are moved
monotonically onto the new quantiles (:func:`mara_env.forecast.head.map_samples`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import numpy as np

from mara_env.forecast.base import MAX_REMAINING, Forecast, History, clean_history, validate_targets
from mara_env.forecast.flow import FlowForecaster
from mara_env.forecast.head import apply_head, fit_head, from_stored, map_samples, padded_history, power_law

KIND = "situ-head"
FORMAT = "mara-flow-situ-v1"
WEIGHTS = Path(__file__).resolve().parent / "weights" / "flow_situ.pt"
RECENT = 5
SITU_FEATURES = (
    "flow_spread_low",
    "flow_spread_high",
    "points",
    "loss_gap",
    "best_gap",
    "loss_progress",
    "power_law_gap",
    "power_law_slope",
    "log_noise",
    "recent_slope",
)


def situ_features(histories: Sequence[History], targets: np.ndarray, quantiles: np.ndarray) -> np.ndarray:
    """``(n, len(SITU_FEATURES))`` inputs of the in-situ head for tasks with at least two usable
    points, from their raw histories, targets and the flow's ``(n, 3)`` quantiles (all positive)."""
    cleaned = [clean_history(w, ell) for w, ell in histories]
    work, loss = padded_history(cleaned)
    log_q = np.log(np.maximum(quantiles, 1e-3))
    targets = np.asarray(targets, dtype=np.float64)
    first = np.array([ell[0] for _, ell in cleaned])
    last, best = loss[:, -1], np.nanmin(loss, axis=1)
    remaining, b, noise = power_law(work, loss, targets)
    gap = np.clip(np.log(remaining) - log_q[:, 1], -6.0, 6.0)
    return np.column_stack(
        [
            log_q[:, 1] - log_q[:, 0],
            log_q[:, 2] - log_q[:, 1],
            np.log([w.size for w, _ in cleaned]),
            np.log(last / targets),
            np.log(best / targets),
            np.log(first / last),
            gap,
            np.clip(b, -1.0, 3.0),
            np.log(noise + 1e-4),
            _recent_slope(work, loss),
        ]
    )


def _recent_slope(work: np.ndarray, loss: np.ndarray) -> np.ndarray:
    """Least-squares slope of ``ln L`` on ``ln w`` over the last :data:`RECENT` padded points."""
    x, y = np.log(work[:, -RECENT:]), np.log(loss[:, -RECENT:])
    ok = np.isfinite(x) & np.isfinite(y)
    count = np.maximum(ok.sum(axis=1), 1)
    mx = np.where(ok, x, 0.0).sum(axis=1) / count
    my = np.where(ok, y, 0.0).sum(axis=1) / count
    dx, dy = np.where(ok, x - mx[:, None], 0.0), np.where(ok, y - my[:, None], 0.0)
    slope = (dx * dy).sum(axis=1) / np.maximum((dx * dx).sum(axis=1), 1e-12)
    return np.clip(slope, -3.0, 1.0)


def refinable(histories: Sequence[History], forecast: Forecast) -> np.ndarray:
    """Indices of the tasks the in-situ head refines: forecast, not yet done, not out of reach, and
    with at least two usable points."""
    p50 = forecast.remaining[:, 1]
    ok = forecast.known & (p50 > 0.0) & (p50 < MAX_REMAINING)
    ok &= np.array([clean_history(w, ell)[0].size >= 2 for w, ell in histories], dtype=bool)
    return np.flatnonzero(ok)


class SituForecaster:
    """``flow`` refined by the in-situ head (see the module docstring).

    Parameters
    ----------
    weights:
        An in-situ head file (:func:`save_head`); default the shipped one.
    **flow_kwargs:
        Passed to :class:`~mara_env.forecast.flow.FlowForecaster` (``samples``, ``seed``, ...).
    """

    name = "flow_situ"

    def __init__(self, weights: str | Path | None = None, **flow_kwargs) -> None:
        self.flow = FlowForecaster(**flow_kwargs)
        self.head = load_head(weights or WEIGHTS)
        if flow_kwargs.get("fixed_noise"):
            self.name = "flow_situ_fixed"

    def reseed(self, seed: int) -> None:
        """Restart the flow's sampling noise from ``seed`` (:meth:`FlowForecaster.reseed`)."""
        self.flow.reseed(seed)

    def predict(self, histories: Sequence[History], targets: Sequence[float]) -> Forecast:
        targets = validate_targets(histories, targets)
        forecast = self.flow.predict(histories, targets)
        return refine(self.head, histories, targets, forecast)


def refine(head: dict, histories: Sequence[History], targets: np.ndarray, forecast: Forecast) -> Forecast:
    """``forecast`` with the refinable tasks' quantiles (and samples) moved by the in-situ ``head``."""
    index = refinable(histories, forecast)
    if index.size == 0:
        return forecast
    chosen = [histories[k] for k in index]
    quantiles = forecast.remaining[index]
    log_q = np.log(np.maximum(quantiles, 1e-3))
    new_log_q = np.minimum(
        apply_head(head, situ_features(chosen, targets[index], quantiles), log_q[:, 1]), np.log(MAX_REMAINING)
    )
    remaining = forecast.remaining.copy()
    remaining[index] = np.exp(new_log_q)
    samples = None
    if forecast.samples is not None:
        samples = forecast.samples.copy()
        samples[index] = np.sort(map_samples(np.sort(samples[index], axis=1), log_q, new_log_q), axis=1)
    return Forecast(remaining, forecast.known.copy(), samples)


class CaseRecorder:
    """A forecaster for recording in-situ cases: answers as ``base`` does, and keeps, for every task it
    would refine, the head's inputs, the base's log median and the true log remaining work (capped
    at ``MAX_REMAINING``). The environment passes it the truth (``needs_truth``)."""

    needs_truth = True

    def __init__(self, base: FlowForecaster) -> None:
        self.base, self.name = base, base.name
        self.features: list[np.ndarray] = []
        self.log_median: list[np.ndarray] = []
        self.log_truth: list[np.ndarray] = []

    def predict(self, histories: Sequence[History], targets: Sequence[float], truth: Sequence[float]) -> Forecast:
        targets = validate_targets(histories, targets)
        forecast = self.base.predict(histories, targets)
        index = refinable(histories, forecast)
        if index.size:
            quantiles = forecast.remaining[index]
            self.features.append(situ_features([histories[k] for k in index], targets[index], quantiles))
            self.log_median.append(np.log(quantiles[:, 1]))
            capped = np.clip(np.asarray(truth, dtype=np.float64)[index], 1e-3, MAX_REMAINING)
            self.log_truth.append(np.log(capped))
        return forecast

    def cases(self) -> dict[str, np.ndarray]:
        """What was recorded: ``features`` ``(n, F)``, ``log_median`` and ``log_truth`` ``(n,)``."""
        if not self.features:
            width = len(SITU_FEATURES)
            return {"features": np.zeros((0, width)), "log_median": np.zeros(0), "log_truth": np.zeros(0)}
        return {
            "features": np.concatenate(self.features),
            "log_median": np.concatenate(self.log_median),
            "log_truth": np.concatenate(self.log_truth),
        }


def record_cases(
    scenarios: Iterable[dict],
    play: Callable[[CaseRecorder, dict], None],
    base: Callable[[], FlowForecaster] = FlowForecaster,
) -> dict[str, np.ndarray]:
    """In-situ cases of every scenario: ``play(recorder, scenario)`` plays it with the recorder as
    the env's forecaster; the cases are concatenated with a ``scenario`` column (its index)."""
    parts = []
    for k, scenario in enumerate(scenarios):
        recorder = CaseRecorder(base())
        play(recorder, scenario)
        cases = recorder.cases()
        parts.append(cases | {"scenario": np.full(cases["log_truth"].size, k)})
    return {key: np.concatenate([p[key] for p in parts]) for key in parts[0]} if parts else {}


def fit_situ_head(cases: dict[str, np.ndarray], seed: int = 0, steps: int = 3000) -> dict:
    """The in-situ head fitted with the pinball loss on recorded ``cases``."""
    if cases["log_truth"].size < 100:
        raise ValueError(f"the in-situ head needs at least 100 cases, got {cases['log_truth'].size}")
    head = fit_head(
        cases["features"],
        cases["log_median"],
        cases["log_truth"],
        seed=seed,
        steps=steps,
        names=SITU_FEATURES,
        kind=KIND,
    )
    return head


def save_head(head: dict, path: str | Path) -> Path:
    """Write ``head`` as a ``weights_only`` tensor file in :data:`FORMAT`."""
    import torch

    from mara_env.forecast.head import to_storable

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"format": FORMAT, "head": to_storable(head)}, path)
    return path


def load_head(path: str | Path) -> dict:
    """The in-situ head stored at ``path``; ``ValueError`` naming the file if it is missing, corrupt,
    foreign or of the wrong shape."""
    from mara_env.safe_load import load_tensor_file

    blob = load_tensor_file(path, FORMAT, "in-situ head", "fit one with examples/train_situ_head.py")
    stored = blob.get("head")
    if not isinstance(stored, dict) or stored.get("kind") != KIND:
        raise ValueError(f"in-situ head {path} holds no head of kind {KIND!r}")
    head = from_stored(stored, SITU_FEATURES)
    if (
        head["w1"].shape[1] != len(SITU_FEATURES)
        or head["w3"].shape[0] != 3
        or head["mean"].shape != (len(SITU_FEATURES),)
    ):
        raise ValueError(f"in-situ head {path} has layers of the wrong shape for {len(SITU_FEATURES)} features")
    return head
