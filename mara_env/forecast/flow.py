"""``flow``: conditional rectified flow over future loss trajectories (MARA's forecaster, our design).

Given a task's observed prefix, the model samples the future of its **best loss so far** on a fixed
grid of future work ``w_now * (1 + r_j)`` (``r_j`` geometric from ``R_MIN`` to ``R_MAX``), in the
coordinates ``z_j = ln(best(w_now * (1 + r_j)) / L_ref)`` with ``L_ref`` the mean of the last three
observed losses. Completion is tested on the best loss, so the remaining work of one sample is read
off where its (running-minimum) trajectory first crosses ``ln(eps / L_ref)``, interpolated in ``r``;
a sample that does not cross within the grid reads ``CENSORED_FACTOR * R_MAX * w_now``.

The prefix encoder sees the last ``PREFIX`` points as ``(ln(w_i / w_now), ln(L_i / L_ref))`` with a
validity mask, plus ``ln(L_0 / L_ref)`` (the untrained loss) and the number of points. Everything is
relative, so the model is invariant to the task's work scale. The velocity network
``v(x_t, t | prefix)`` is an MLP; sampling uses ``steps`` Euler steps from Gaussian noise, batched
over tasks and samples. Weights ship in the package and load with ``torch.load(weights_only=True)``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from mara_env.forecast.base import MAX_REMAINING, Forecast, History, clean_history, unknown, validate_targets
from mara_env.forecast.calibration import apply_calibration
from mara_env.forecast.head import (
    FEATURES,
    KIND,
    apply_head,
    from_stored,
    head_features,
    map_samples,
    padded_history,
    sorted_quantiles,
)
from mara_env.torch_threads import torch_threads

PREFIX = 16
GRID = 32
R_MIN, R_MAX = 0.02, 30.0
CENSORED_FACTOR = 2.0
WEIGHTS = Path(__file__).resolve().parent / "weights" / "flow.pt"
FORMAT = "mara-flow-v1"


_R = np.geomspace(R_MIN, R_MAX, GRID)
_R.setflags(write=False)


def future_grid() -> np.ndarray:
    """``r_j``: future work as a multiple of current work, beyond the current point (read-only)."""
    return _R


def sample_quantiles(samples: np.ndarray, quantiles: Sequence[float] = (0.1, 0.5, 0.9)) -> np.ndarray:
    """Per-row quantiles of ``(n, S)`` samples by linear interpolation (numpy's default rule)."""
    return sorted_quantiles(np.sort(samples, axis=1), quantiles)


def encode_prefix(work: np.ndarray, loss: np.ndarray, first_loss: float) -> tuple[np.ndarray, float] | None:
    """Conditioning vector of one cleaned prefix (``None`` below two points), and ``ln L_ref``."""
    if work.size < 2:
        return None
    work, loss = work[-PREFIX:], loss[-PREFIX:]
    log_ref = float(np.log(loss[-3:]).mean())
    m = work.size
    feats = np.zeros(3 * PREFIX + 2, dtype=np.float32)
    feats[PREFIX - m : PREFIX] = np.log(work / work[-1])
    feats[2 * PREFIX - m : 2 * PREFIX] = np.log(loss) - log_ref
    feats[3 * PREFIX - m : 3 * PREFIX] = 1.0
    feats[3 * PREFIX] = math.log(first_loss) - log_ref if first_loss > 0 and math.isfinite(first_loss) else 0.0
    feats[3 * PREFIX + 1] = math.log(m)
    return feats, log_ref


CONDITION_SIZE = 3 * PREFIX + 2


def read_remaining(samples: np.ndarray, log_target: np.ndarray, current: np.ndarray) -> np.ndarray:
    """Remaining work of every sample ``(n, S)`` from trajectories ``(n, S, GRID)`` (relative coords)."""
    r = future_grid()
    best = np.minimum.accumulate(samples, axis=2)
    below = best <= log_target[:, None, None]
    hit = below.any(axis=2)
    j = np.argmax(below, axis=2)
    # interpolate in r between grid point j-1 (above the target) and j (at or below it)
    prev = np.take_along_axis(best, np.maximum(j - 1, 0)[..., None], axis=2)[..., 0]
    here = np.take_along_axis(best, j[..., None], axis=2)[..., 0]
    r_prev = r[np.maximum(j - 1, 0)]
    frac = np.clip((prev - log_target[:, None]) / np.maximum(prev - here, 1e-9), 0.0, 1.0)
    r_hit = np.where(j > 0, r_prev + frac * (r[j] - r_prev), r[0])
    r_all = np.where(hit, r_hit, CENSORED_FACTOR * R_MAX)
    return np.clip(r_all * current[:, None], 0.0, MAX_REMAINING)


class _Batch:
    """The tasks of one ``predict`` call that the flow samples, with what it and the head read."""

    def __init__(self) -> None:
        self.index: list = []
        self.conditions: list = []
        self.log_refs: list = []
        self.current: list = []
        self.cleaned: list = []
        self.firsts: list = []
        self.targets: list = []

    def add(self, k: int, encoded: tuple[np.ndarray, float], cleaned: History, first: float, target: float) -> None:
        self.index.append(k)
        self.conditions.append(encoded[0])
        self.log_refs.append(encoded[1])
        self.current.append(cleaned[0][-1])
        self.cleaned.append(cleaned)
        self.firsts.append(first)
        self.targets.append(target)

    def done(self) -> _Batch:
        """Stack the per-task lists into arrays (``cleaned`` stays a list)."""
        self.index = np.asarray(self.index, dtype=int)
        self.conditions = np.stack(self.conditions)
        for name in ("log_refs", "current", "firsts", "targets"):
            setattr(self, name, np.asarray(getattr(self, name), dtype=np.float64))
        return self


class FlowForecaster:
    """Sample future best-loss trajectories with a trained conditional rectified flow.

    Parameters
    ----------
    weights:
        Path of the weights file (default: the shipped one).
    samples:
        Trajectories sampled per task.
    steps:
        Euler steps of the sampler.
    seed:
        Seed of the sampler's noise (each call draws fresh noise from this generator).
    fixed_noise:
        Start every task's trajectories from the same ``samples`` noise vectors, drawn once from
        ``seed`` (common random numbers): a forecast is then a function of the task's history alone,
        the same at every call and in every episode, instead of jittering by the sampling noise from
        one slot to the next. Registered as the forecaster ``flow_fixed``.
    threads:
        Torch CPU threads while sampling (restored after each call). The batches are small, so
        one thread is fastest, and more threads only contend with other processes.
    calibrated:
        Apply the calibration stored with the weights (the quantile head of
        :mod:`mara_env.forecast.head`, or the older single widening factor of
        :mod:`mara_env.forecast.calibration`); False gives the raw samples. With the head, each
        task's samples come back sorted (they are draws of one task's remaining work; nothing
        pairs sample ``k`` of one task with sample ``k`` of another).
    """

    name = "flow"

    def __init__(
        self,
        weights: str | Path | None = None,
        samples: int = 32,
        steps: int = 6,
        seed: int = 0,
        threads: int = 1,
        calibrated: bool = True,
        fixed_noise: bool = False,
    ) -> None:
        import torch

        from mara_env.forecast.flow_net import load_flow_net

        net = load_flow_net(Path(weights) if weights else WEIGHTS)
        self._setup(net, samples, steps, seed, threads, net.calibration if calibrated else None)
        if fixed_noise:
            self.name = "flow_fixed"
            self.fixed_noise = torch.randn(self.samples, GRID, generator=torch.Generator().manual_seed(seed))

    @classmethod
    def from_net(cls, net, samples: int = 32, steps: int = 6, seed: int = 0, calibration: dict | None = None):
        """A forecaster around an in-memory network (training and calibration use it)."""
        self = cls.__new__(cls)
        self._setup(net, samples, steps, seed, 1, calibration)
        return self

    def _setup(self, net, samples: int, steps: int, seed: int, threads: int, calibration: dict | None) -> None:
        import torch

        self.net, self.calibration = net, calibration
        self.head = from_stored(calibration) if calibration and calibration.get("kind") == KIND else None
        self.samples, self.steps, self.threads = int(samples), int(steps), int(threads)
        self.generator = torch.Generator().manual_seed(seed)
        self.fixed_noise: torch.Tensor | None = None

    def reseed(self, seed: int) -> None:
        """Restart the sampling noise from ``seed`` (the env does at every reset; ``fixed_noise`` keeps its
        vectors, drawn once)."""
        self.generator.manual_seed(seed)

    def predict(self, histories: Sequence[History], targets: Sequence[float]) -> Forecast:
        targets = validate_targets(histories, targets)
        result, batch = self._prepare(histories, targets)
        if batch is None:
            return result
        raw = self._raw_samples(batch)
        if self.head is not None:  # sorted raw samples map to sorted samples (the map is monotone)
            raw = np.sort(raw, axis=1)
            features, log_raw = self._head_inputs(batch, raw)
            remaining = map_samples(raw, log_raw, apply_head(self.head, features, log_raw[:, 1]))
            quantiles = sorted_quantiles(remaining)
        else:
            remaining = apply_calibration(raw, self.calibration)
            quantiles = sample_quantiles(remaining)
        samples = np.zeros((len(histories), self.samples))
        samples[batch.index] = remaining
        result.remaining[batch.index] = quantiles
        result.known[batch.index] = True
        return Forecast(result.remaining, result.known, samples)

    def head_inputs(
        self, histories: Sequence[History], targets: Sequence[float]
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The quantile head's inputs for the tasks the flow forecasts: ``(features, raw log median,
        index of those tasks)`` (what :mod:`mara_env.forecast.crossfit` trains the head on)."""
        targets = validate_targets(histories, targets)
        _, batch = self._prepare(histories, targets)
        if batch is None:
            return np.zeros((0, len(FEATURES))), np.zeros(0), np.zeros(0, dtype=int)
        features, log_raw = self._head_inputs(batch, np.sort(self._raw_samples(batch), axis=1))
        return features, log_raw[:, 1], batch.index

    def _prepare(self, histories: Sequence[History], targets: np.ndarray) -> tuple[Forecast, _Batch | None]:
        """The answer for tasks decided without sampling, and the batch of those to sample."""
        result = unknown(len(histories))
        batch = _Batch()
        for k, (work, loss) in enumerate(histories):
            first = float(np.asarray(loss, dtype=np.float64).ravel()[0]) if np.size(loss) else math.nan
            clean_w, clean_l = clean_history(work, loss)
            if not (np.isfinite(targets[k]) and targets[k] > 0):
                continue
            if clean_l.size and clean_l.min() <= targets[k]:
                result.remaining[k], result.known[k] = 0.0, True
                continue
            encoded = encode_prefix(clean_w, clean_l, first)
            if encoded is not None:
                batch.add(k, encoded, (clean_w, clean_l), first, targets[k])
        return result, (batch.done() if batch.index else None)

    def _raw_samples(self, batch: _Batch) -> np.ndarray:
        trajectories = self.sample(batch.conditions)
        return read_remaining(trajectories, np.log(batch.targets) - batch.log_refs, batch.current)

    def _head_inputs(self, batch: _Batch, raw: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Head features and the raw log quantiles from row-sorted raw samples."""
        work, loss = padded_history(batch.cleaned)
        censor_at = np.minimum(CENSORED_FACTOR * R_MAX * batch.current, MAX_REMAINING)
        return head_features(work, loss, batch.firsts, batch.log_refs, batch.targets, raw, censor_at)

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["generator"] = self.generator.get_state()  # a torch.Generator does not pickle itself
        return state

    def __setstate__(self, state: dict) -> None:
        import torch

        generator = torch.Generator()
        generator.set_state(state.pop("generator"))
        self.__dict__.update(state, generator=generator)

    def sample(self, conditions: np.ndarray) -> np.ndarray:
        """``(n, samples, GRID)`` trajectories for ``n`` conditioning vectors."""
        import torch

        n, s = conditions.shape[0], self.samples
        with torch_threads(self.threads), torch.inference_mode():
            cond = self.net.condition(torch.as_tensor(conditions, dtype=torch.float32))
            if self.fixed_noise is None:
                x = torch.randn(n * s, GRID, generator=self.generator)
            else:  # the same noise for every task (rows k*s .. k*s+s-1 are task k's)
                x = self.fixed_noise.repeat(n, 1)
            x = self.net.integrate(x, cond.repeat_interleave(s, dim=0), self.steps)
        return x.numpy().reshape(n, s, GRID)
