"""The flow's quantile head (mara_env.forecast.head) and its cross-fitted training rows."""

import numpy as np
import pytest

from mara_env.forecast import crossfit
from mara_env.forecast import head as qh
from mara_env.forecast.evaluation import make_cases


def padded(work, loss):
    return qh.padded_history([(np.asarray(work, float), np.asarray(loss, float))])


def test_power_law_recovers_an_exact_power_law_and_its_remaining_work():
    work = np.arange(1.0, 21.0)
    work_pad, loss_pad = padded(work, 2.0 * work**-0.5)
    remaining, b, noise = qh.power_law(work_pad, loss_pad, np.array([0.2]))
    # 2 w^-0.5 = 0.2  <=>  w = 100, so 80 node-slots after w = 20
    assert b[0] == pytest.approx(0.5, abs=1e-9) and noise[0] == pytest.approx(0.0, abs=1e-9)
    assert remaining[0] == pytest.approx(80.0, rel=1e-6)


def test_power_law_reads_a_flat_curve_as_out_of_reach():
    work_pad, loss_pad = padded(np.arange(1.0, 11.0), np.full(10, 0.5))
    remaining, b, _ = qh.power_law(work_pad, loss_pad, np.array([0.1]))
    assert b[0] == pytest.approx(0.0, abs=1e-9) and remaining[0] == qh.MAX_REMAINING


def test_padded_history_keeps_the_last_points_right_aligned():
    work_pad, loss_pad = padded(np.arange(1.0, 101.0), np.linspace(2, 1, 100))
    assert work_pad.shape == (1, qh.HISTORY) and work_pad[0, -1] == 100.0 and work_pad[0, 0] == 101.0 - qh.HISTORY
    short_w, _ = padded([1.0, 2.0], [1.0, 0.9])
    assert np.isnan(short_w[0, :-2]).all() and list(short_w[0, -2:]) == [1.0, 2.0]


def test_map_samples_puts_the_quantiles_where_asked_and_keeps_the_order():
    rng = np.random.default_rng(0)
    samples = np.sort(np.exp(rng.normal(2.0, 0.3, (5, 11))), axis=1)  # 11 samples: p10/p50/p90 are samples 1/5/9
    raw = np.log(qh.sorted_quantiles(samples))
    wanted = raw[:, 1:2] + np.array([[-1.0, 0.4, 2.0]])  # shifted up by 0.4, far wider
    moved = qh.map_samples(samples, raw, wanted)
    np.testing.assert_allclose(np.log(qh.sorted_quantiles(moved)), wanted, rtol=1e-9)
    assert np.all(np.diff(moved, axis=1) >= 0)


@pytest.mark.filterwarnings("error")
def test_map_samples_stays_finite_and_capped_on_absurd_quantiles():
    samples = np.sort(np.array([[1e-9, 1.0, 5.0, 1e3, 1e3]]), axis=1)
    raw = np.log(qh.sorted_quantiles(samples) + 1e-3)
    moved = qh.map_samples(samples, raw, np.array([[-800.0, 0.0, 900.0]]))
    assert np.all(np.isfinite(moved)) and moved.max() == pytest.approx(qh.MAX_REMAINING) and moved.min() >= 0


def test_apply_head_always_orders_the_quantiles():
    rng = np.random.default_rng(1)
    k = len(qh.FEATURES)
    params = {"mean": np.zeros(k), "scale": np.ones(k)}
    for i, (rows, cols) in enumerate([(qh.HIDDEN, k), (qh.HIDDEN, qh.HIDDEN), (3, qh.HIDDEN)], start=1):
        params[f"w{i}"], params[f"b{i}"] = rng.normal(0, 2, (rows, cols)), rng.normal(0, 2, rows)
    out = qh.apply_head(params, rng.normal(0, 3, (500, k)), np.zeros(500))
    assert np.all(out[:, 0] <= out[:, 1]) and np.all(out[:, 1] <= out[:, 2])


def test_fit_head_learns_a_bias_and_a_spread():
    rng = np.random.default_rng(2)
    n = 6000
    features = rng.normal(0, 1, (n, len(qh.FEATURES)))
    log_median = rng.normal(3, 1, n)
    log_truth = log_median + 0.5 + rng.normal(0, 1, n)  # the flow is low by e^0.5 and far too sure
    head = qh.fit_head(features, log_median, log_truth, seed=0, steps=800)
    out = qh.apply_head(head, features, log_median) - log_median[:, None]
    # the normal's p10/p50/p90 are 0.5 -1.28, 0.5, 0.5 + 1.28
    assert np.median(out, axis=0) == pytest.approx([0.5 - 1.28, 0.5, 0.5 + 1.28], abs=0.2)
    inside = np.mean((out[:, 0] <= log_truth - log_median) & (log_truth - log_median <= out[:, 2]))
    assert inside == pytest.approx(0.8, abs=0.04)


def test_a_stored_head_survives_a_weights_file_and_is_checked(tmp_path):
    from mara_env.forecast.flow import FlowForecaster
    from mara_env.forecast.flow_net import FlowNet, load_flow_net, save_flow_net

    rng = np.random.default_rng(3)
    head = qh.fit_head(rng.normal(0, 1, (500, len(qh.FEATURES))), np.zeros(500), rng.normal(0, 1, 500), steps=50)
    net = FlowNet()
    save_flow_net(net, tmp_path / "flow.pt", {"calibration": qh.to_storable(head)})
    loaded = FlowForecaster(weights=tmp_path / "flow.pt", seed=4)
    in_memory = FlowForecaster.from_net(load_flow_net(tmp_path / "flow.pt"), seed=4, calibration=head)
    histories, targets, _ = make_cases("synthetic", 0.25, 6, 0)
    np.testing.assert_array_equal(
        loaded.predict(histories, targets).remaining, in_memory.predict(histories, targets).remaining
    )
    with pytest.raises(ValueError, match="quantile head must name"):
        qh.from_stored({**head, "features": ["something else"]})


def test_spread_cases_observe_a_fraction_of_the_need_in_the_asked_range():
    histories, targets, truth = make_cases("synthetic", (0.2, 0.4), 50, 0, split="train")
    done = np.array([w[-1] for w, _ in histories])
    fraction = done / (done + truth)
    assert np.all(fraction >= 0.2 - 0.05) and np.all(fraction <= 0.4 + 1e-9)
    assert fraction.std() > 0.03  # drawn per case, not one fraction for all


def test_crossfit_leaves_the_excluded_bank_out_of_both_kinds_of_rows(monkeypatch, tmp_path):
    from mara_env.forecast.flow_net import FlowNet

    calls = []
    monkeypatch.setattr(crossfit, "without_weights", lambda bank, folder, progress=False: f"{folder}/{bank}")
    monkeypatch.setattr("mara_env.forecast.flow_net.load_flow_net", lambda path: ("without", str(path)))

    def rows(net, bank, split, count, seed):
        calls.append((net if isinstance(net, tuple) else "shipped", bank, split))
        rng = np.random.default_rng(len(calls))
        return rng.normal(0, 1, (40, len(qh.FEATURES))), rng.normal(0, 1, 40), rng.normal(0, 1, 40)

    monkeypatch.setattr(crossfit, "head_rows", rows)
    monkeypatch.setattr(crossfit, "fit_head", lambda f, m, t, seed=0: {"rows": len(t)})
    out = crossfit.fit_crossfit_head(FlowNet(), ["synthetic", "vision", "rl"], tmp_path, exclude="vision")
    assert ("without", f"{tmp_path}/synthetic") in [c[0] for c in calls]
    assert all(bank != "vision" for _, bank, _ in calls)
    assert {(c[0] == "shipped", c[2]) for c in calls} == {(False, "train"), (True, "val")}
    assert out == {"rows": 160, "excluded": "vision"}
