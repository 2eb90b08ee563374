"""Forecasters: hand-computed power laws, bad histories, the oracle, env features, the benchmark."""

import numpy as np
import pytest

import mara_env
from mara_env import forecast
from mara_env.env import live_turns
from mara_env.forecast import MAX_REMAINING
from mara_env.forecast.evaluation import crps_from_samples, make_cases
from mara_env.forecast.features import normal_cdf, probability_within
from mara_env.forecast.oracle import ORACLE_MAX
from mara_env.observation import decode

BAD_HISTORIES = {
    "nan": (np.array([0.0, 1.0, 2.0, 3.0]), np.array([2.0, np.nan, np.nan, np.nan])),
    "inf": (np.array([0.0, 1.0, 2.0]), np.array([2.0, np.inf, np.inf])),
    "zero": (np.array([0.0, 1.0, 2.0]), np.array([2.0, 0.0, 0.0])),
    "negative": (np.array([0.0, 1.0, 2.0]), np.array([2.0, -1.0, -0.5])),
    "one point": (np.array([0.0, 1.0]), np.array([2.0, 1.5])),
    "empty": (np.array([]), np.array([])),
    "non-increasing work": (np.array([0.0, 3.0, 2.0, 1.0]), np.array([2.0, 1.5, 1.4, 1.3])),
}


def power_law(points=20, a=2.0, b=0.5):
    work = np.arange(0.0, points + 1.0)
    loss = np.where(work > 0, a * np.maximum(work, 1e-9) ** -b, a)
    return work, loss


def test_wls_recovers_an_exact_power_law():
    # L = 2 w^-0.5 reaches 0.25 at w = (2 / 0.25)^2 = 64; observed up to w = 20: 44 to go.
    f = forecast.WLSForecaster(discount=1.0, ridge=0.0)
    c, b, _ = f.fit(*power_law())
    assert c == pytest.approx(np.log(2.0), abs=1e-9) and b == pytest.approx(0.5, abs=1e-9)
    result = f.predict([power_law()], [0.25])
    assert result.known[0]
    assert result.remaining[0, 1] == pytest.approx(44.0, rel=1e-6)
    lo, hi = result.remaining[0, 0], result.remaining[0, 2]
    assert lo < 44.0 < hi  # the floor of the log-sd keeps an interval
    assert (64 * np.exp(0.05 * 1.2815515655446004) - 20) == pytest.approx(hi, rel=1e-6)


def test_dkf_converges_on_an_exact_power_law():
    result = forecast.DKFForecaster().predict([power_law(points=30)], [0.25])
    assert result.known[0]
    assert result.remaining[0, 1] == pytest.approx(34.0, rel=0.1)  # 64 - 30


@pytest.mark.parametrize("name", ["wls", "dkf"])
def test_reached_and_rising_histories(name):
    f = forecast.make(name)
    work = np.array([0.0, 1.0, 2.0, 3.0])
    rising = (work, np.array([1.0, 1.1, 1.2, 1.3]))
    reached = (work, np.array([2.0, 1.0, 0.5, 0.4]))
    result = f.predict([rising, reached], [0.5, 0.45])
    np.testing.assert_array_equal(result.remaining[1], [0.0, 0.0, 0.0])
    assert result.remaining[0, 1] == MAX_REMAINING


@pytest.mark.parametrize("name", ["wls", "dkf", "flow"])
@pytest.mark.parametrize("case", list(BAD_HISTORIES))
def test_bad_histories_get_the_unknown_answer(name, case):
    f = forecast.make(name)
    good = power_law()
    result = f.predict([BAD_HISTORIES[case], good], [0.25, 0.25])
    assert not result.known[0] and result.known[1]
    np.testing.assert_array_equal(result.remaining[0], [0.0, MAX_REMAINING, MAX_REMAINING])
    assert np.all(np.isfinite(result.remaining))


@pytest.mark.parametrize("name", ["wls", "dkf", "flow"])
@pytest.mark.parametrize("target", [np.nan, 0.0, -1.0, np.inf])
def test_bad_targets_get_the_unknown_answer(name, target):
    result = forecast.make(name).predict([power_law()], [target])
    assert not result.known[0] and np.all(np.isfinite(result.remaining))


def test_mismatched_lengths_raise():
    with pytest.raises(ValueError, match="2 histories but 1 targets"):
        forecast.make("wls").predict([power_law(), power_law()], [0.5])


def test_oracle_passes_the_truth_and_needs_it():
    o = forecast.make("oracle")
    result = o.predict([power_law()] * 2, [0.5, 0.5], truth=[3.0, np.inf])
    np.testing.assert_array_equal(result.remaining, [[3.0] * 3, [ORACLE_MAX] * 3])  # unknown: as far as it can say
    with pytest.raises(ValueError, match="needs truth"):
        o.predict([power_law()], [0.5])


def test_unknown_forecaster_name():
    with pytest.raises(ValueError, match="forecaster must be one of"):
        forecast.make("crystal_ball")


def test_normal_cdf_and_probability_within():
    assert normal_cdf(np.array([0.0]))[0] == pytest.approx(0.5)
    assert normal_cdf(np.array([1.959964]))[0] == pytest.approx(0.975, abs=1e-6)
    q = np.array([[5.0, 10.0, 20.0], [0.0, 0.0, 0.0], [MAX_REMAINING] * 3])
    p = probability_within(q, np.array([10.0, 1.0, 50.0]))
    assert p[0] == pytest.approx(0.5) and p[1] == 1.0 and p[2] == 0.0
    assert probability_within(q[:1], np.array([20.0]))[0] == pytest.approx(0.9, abs=1e-6)


def test_crps_of_a_point_mass_is_the_absolute_error():
    samples = np.full((1, 8), 3.0)
    assert crps_from_samples(samples, np.array([5.0]))[0] == pytest.approx(2.0)
    # two equally likely values 0 and 2, truth 1: E|X - y| = 1, E|X - X'| / 2 = 0.5
    assert crps_from_samples(np.array([[0.0, 2.0]]), np.array([1.0]))[0] == pytest.approx(0.5)


@pytest.mark.parametrize("name", ["wls", "dkf", "oracle", "flow"])
def test_env_fills_forecast_features_without_nan(name):
    env = mara_env.raw_env(num_nodes=4, forecaster=name, horizon=80)
    env.reset(seed=0)
    seen_valid = False
    for agent in live_turns(env):
        obs = env.observe(agent)
        assert np.all(np.isfinite(obs["observation"]))
        dec = decode(obs)
        present = dec.row("present") > 0
        valid = dec.row("forecast_valid") > 0
        assert not np.any(valid & ~present)
        p = dec.row("p_finish")[present]
        assert np.all((p >= 0) & (p <= 1))
        seen_valid |= bool(valid.any())
        env.step(int(np.flatnonzero(obs["action_mask"])[-1]))
    assert seen_valid


def test_forecasts_are_computed_once_per_slot_for_new_observations_only():
    calls, seen = [], []

    class Counting(forecast.WLSForecaster):
        def predict(self, histories, targets):
            calls.append(len(histories))
            seen.extend((float(loss[0]), float(t), len(work)) for (work, loss), t in zip(histories, targets))
            return super().predict(histories, targets)

    env = mara_env.raw_env(num_nodes=4, forecaster=Counting(), horizon=60)
    env.reset(seed=0)
    for _slot in range(40):
        for _ in range(4):
            obs = env.observe(env.agent_selection)
            env.step(int(np.flatnonzero(obs["action_mask"])[-1]))
    assert 0 < len(calls) <= 41  # at most one batched call per slot, never one per node turn
    assert len(seen) == len(set(seen))  # a task is forecast again only after a new observation


def test_oracle_features_equal_the_true_remaining_work():
    env = mara_env.raw_env(num_nodes=2, forecaster="oracle", horizon=80)
    env.reset(seed=1)
    for _ in range(20):
        for _ in range(2):
            obs = env.observe(env.agent_selection)
            env.step(int(np.flatnonzero(obs["action_mask"])[-1]))
    dec = decode(env.observe(env.agent_selection))
    for row, task in enumerate(env.sim.rows):
        if task is not None:
            truth = (task.spec.required_work - task.work) / 100.0
            assert dec.row("remaining_p50")[row] == pytest.approx(truth, rel=1e-5, abs=1e-6)


def test_forecast_cases_are_prefixes_of_the_need():
    histories, targets, truth = make_cases("synthetic", 0.25, 50, seed=0)
    assert len(histories) == 50 and np.all(truth > 0)
    for (work, loss), target in zip(histories, targets):
        assert work[0] == 0.0 and np.all(np.diff(work) > 0) and loss.min() > target


def test_flow_fast_sampler_matches_the_module_path():
    import torch

    from mara_env.forecast.flow import WEIGHTS
    from mara_env.forecast.flow_net import load_flow_net

    net = load_flow_net(WEIGHTS)
    gen = torch.Generator().manual_seed(0)
    cond, x0 = torch.randn(16, net.from_prefix.out_features, generator=gen), torch.randn(16, 32, generator=gen)
    x, steps = x0.clone(), 6
    with torch.no_grad():
        for i in range(steps):
            x = x + net.velocity(x, torch.full((1, 1), i / steps), cond) / steps
    torch.testing.assert_close(net.integrate(x0.clone(), cond, steps), x, rtol=1e-5, atol=1e-5)


def test_flow_is_seeded_and_batched():
    histories, targets, _ = make_cases("synthetic", 0.25, 8, seed=0)
    a = forecast.make("flow", seed=3).predict(histories, targets)
    b = forecast.make("flow", seed=3).predict(histories, targets)
    np.testing.assert_array_equal(a.remaining, b.remaining)
    assert a.samples.shape == (8, 32) and np.all(a.samples >= 0)
    one = forecast.make("flow", seed=3, samples=256).predict(histories[:1], targets[:1])
    assert one.remaining[0, 0] <= one.remaining[0, 1] <= one.remaining[0, 2]


class NotAWeight:
    """A pickled object of a class that safe loading must refuse."""


@pytest.mark.parametrize("damage", ["missing", "truncated", "garbage", "pickle", "mismatch"])
def test_bad_flow_weights_are_refused_clearly(tmp_path, damage):
    import torch

    from mara_env.forecast.flow import WEIGHTS

    path = tmp_path / "flow.pt"
    if damage == "truncated":
        data = WEIGHTS.read_bytes()
        path.write_bytes(data[: len(data) // 3])
    elif damage == "garbage":
        path.write_bytes(b"\x00" * 100)
    elif damage == "pickle":  # an arbitrary object must not be unpickled
        torch.save({"format": "mara-flow-v1", "payload": NotAWeight()}, path)
    elif damage == "mismatch":
        blob = torch.load(WEIGHTS, weights_only=True)
        blob["config"]["grid"] = 7
        torch.save(blob, path)
    with pytest.raises(ValueError, match="flow forecaster weights"):
        forecast.make("flow", weights=path)


def test_sample_quantiles_match_numpy():
    from mara_env.forecast.flow import sample_quantiles

    x = np.random.default_rng(0).exponential(size=(5, 32))
    np.testing.assert_allclose(sample_quantiles(x), np.quantile(x, [0.1, 0.5, 0.9], axis=1).T)


def test_flow_fixed_forecasts_depend_on_the_history_alone():
    """Common random numbers: the same task gets the same forecast at every call and whatever the
    other tasks of the batch, where plain flow redraws its noise at each call."""
    work = np.arange(1, 21, dtype=float)
    histories = [(work, 2.0 * work**-0.3), (work[:10], 2.2 * work[:10] ** -0.3)]
    fixed = forecast.make("flow_fixed")
    first = fixed.predict(histories, [0.8, 0.9]).remaining
    # equal up to float32 rounding: the network's products may be summed in another order when the rows
    # of the batch move or its size changes (seen at 1e-6 relative on some CPUs)
    np.testing.assert_allclose(fixed.predict(histories[::-1], [0.9, 0.8]).remaining, first[::-1], rtol=1e-5)
    np.testing.assert_allclose(fixed.predict(histories[:1], [0.8]).remaining, first[:1], rtol=1e-5)
    plain = forecast.make("flow")  # its redraws differ by far more than that rounding
    assert not np.allclose(
        plain.predict(histories, [0.8, 0.9]).remaining, plain.predict(histories, [0.8, 0.9]).remaining, rtol=1e-3
    )


def test_an_env_with_flow_fixed_replays_a_seed_after_other_episodes():
    from mara_agents.evaluation import evaluate

    settings = {"num_nodes": 4, "max_tasks": 8, "horizon": 40, "forecaster": "flow_fixed"}
    alone = evaluate("srw", [3], **settings)[0]
    after = evaluate("srw", [1, 3], **settings)[1]
    assert alone["completed"] == after["completed"] and alone["return"] == after["return"]
