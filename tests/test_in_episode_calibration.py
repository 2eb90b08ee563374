"""In-episode forecast calibration: the shift by hand, the env's use of it, and its refusals."""

import math
from types import SimpleNamespace

import numpy as np
import pytest

import mara_env
from mara_agents import load_agent
from mara_agents.base import EnvRequirements
from mara_agents.evaluation import env_config
from mara_env.forecast import MAX_REMAINING, Forecast
from mara_env.forecast.features import ForecastFeatures
from mara_env.forecast.in_episode import InEpisodeCalibration
from mara_env.forecast.oracle import OracleForecaster
from mara_env.observation import WORK_SCALE, decode
from tests.test_mara_policy import _train_mara_config


def calibration_with_ratios(ratios, prior=20.0, **kwargs):
    calibration = InEpisodeCalibration(prior=prior, **kwargs)
    for task_id, ratio in enumerate(ratios):
        calibration.first_forecast(task_id, work=2.0, median=4.0)
        calibration.finished(task_id, work=2.0 + 4.0 * ratio)
    return calibration


def test_one_finished_task_shifts_by_its_log_ratio_shrunk_by_the_prior():
    # first forecast: 4 more at work 2; finished at work 10: it needed 8, twice the median
    calibration = calibration_with_ratios([2.0])
    assert calibration.finished_count == 1
    assert calibration.log_shift == pytest.approx(math.log(2.0) * 1 / 21)


def test_the_shift_is_the_median_log_ratio_of_the_latest_window():
    assert calibration_with_ratios([2.0, 0.5, 1.0], prior=1e-9).log_shift == pytest.approx(0.0, abs=1e-9)
    # window 2 keeps the last two ratios, 0.5 and 0.25: median log = ln(0.3536), times 2 / (2 + 2)
    calibration = calibration_with_ratios([8.0, 0.5, 0.25], prior=2.0, window=2)
    assert calibration.log_shift == pytest.approx((math.log(0.5) + math.log(0.25)) / 2 * 2 / 4)


def test_the_shift_is_capped_both_ways():
    assert calibration_with_ratios([1e6] * 50, max_log_shift=1.5).log_shift == pytest.approx(1.5)
    assert calibration_with_ratios([1e-6] * 50, max_log_shift=1.5).log_shift == pytest.approx(-1.5)


def test_expired_unforecast_and_hopeless_tasks_tell_nothing():
    calibration = InEpisodeCalibration()
    calibration.first_forecast(1, work=1.0, median=3.0)
    calibration.forget(1)  # expired
    calibration.finished(1, work=9.0)
    calibration.finished(2, work=9.0)  # never forecast
    calibration.first_forecast(3, work=1.0, median=MAX_REMAINING)  # "not within reach"
    calibration.finished(3, work=9.0)
    calibration.first_forecast(4, work=1.0, median=0.0)
    calibration.finished(4, work=9.0)
    assert calibration.finished_count == 0 and calibration.log_shift == 0.0


def test_only_the_first_forecast_counts_and_reset_forgets_the_episode():
    calibration = InEpisodeCalibration(prior=1e-9)
    calibration.first_forecast(1, work=0.0, median=2.0)
    calibration.first_forecast(1, work=5.0, median=100.0)  # ignored
    calibration.finished(1, work=4.0)
    assert calibration.log_shift == pytest.approx(math.log(2.0))
    calibration.reset()
    assert calibration.finished_count == 0 and calibration.log_shift == 0.0


def test_apply_scales_valid_rows_below_the_cap_only():
    calibration = calibration_with_ratios([0.5] * 10, prior=1e-9)  # shift ln 0.5
    quantiles = np.array([[2.0, 4.0, 8.0], [2.0, 4.0, 8.0], [100.0, 600.0, MAX_REMAINING]])
    out = calibration.apply(quantiles, np.array([True, False, True]))
    np.testing.assert_allclose(out, [[1.0, 2.0, 4.0], [2.0, 4.0, 8.0], [50.0, 300.0, MAX_REMAINING]])
    grown = calibration_with_ratios([4.0] * 10, prior=1e-9).apply(np.array([[300.0, 600.0, 900.0]]), np.array([True]))
    np.testing.assert_allclose(grown, [[MAX_REMAINING] * 3])  # scaled past the cap: held at it


@pytest.mark.parametrize(
    "kwargs, name",
    [({"prior": 0}, "prior"), ({"prior": float("nan")}, "prior"), ({"window": 0}, "window"),
     ({"window": 2.5}, "window"), ({"max_log_shift": -1}, "max_log_shift"), ({"prior": True}, "prior")],
)  # fmt: skip
def test_bad_settings_are_named(kwargs, name):
    with pytest.raises(ValueError, match=name):
        InEpisodeCalibration(**kwargs)


class FixedForecaster:
    """Every task: p10, p50, p90 = 1, 2, 3 node-slots."""

    name = "fixed"

    def predict(self, histories, targets):
        return Forecast(np.tile([1.0, 2.0, 3.0], (len(histories), 1)), np.ones(len(histories), dtype=bool))


def fake_task(task_id, history_work, reached=False):
    spec = SimpleNamespace(task_id=task_id, target=0.5, deadline=50, scaling_exponent=1.0)
    return SimpleNamespace(spec=spec, history_work=list(history_work), history_loss=[1.0] * len(history_work),
                           work=history_work[-1], reached_target=reached, nodes_last_slot=1)  # fmt: skip


def test_features_learn_from_a_finished_task_at_the_middle_of_its_last_slot():
    features = ForecastFeatures(FixedForecaster(), max_tasks=2, calibration=InEpisodeCalibration(prior=1.0))
    first = fake_task(7, [0.0, 4.0])
    features.features(SimpleNamespace(rows=[first, None], slot=1))  # first forecast: 2 more at work 4
    done = fake_task(7, [0.0, 4.0, 12.0], reached=True)  # crossed the target between work 4 and 12
    features._seen[7] = done  # the simulator's object, trained since
    out = features.features(SimpleNamespace(rows=[None, fake_task(8, [0.0, 1.0])], slot=2))
    shift = math.log(((4.0 + 12.0) / 2 - 4.0) / 2.0) / 2  # needed 4 (twice the median), n / (n + 1) = 1/2
    np.testing.assert_allclose(out[1, :3] * WORK_SCALE, np.array([1.0, 2.0, 3.0]) * math.exp(shift), rtol=1e-6)
    assert np.all(out[0] == 0)


def test_the_env_columns_are_the_plain_forecasts_times_the_episodes_shift():
    envs = {}
    for calibrate in (False, True):
        env = mara_env.raw_env(num_nodes=4, max_tasks=8, horizon=120, workload="rl", calibrate_forecasts=calibrate)
        env.reset(seed=3)
        while env.agents:  # edf's order without reading forecasts: every node on the earliest deadline
            obs = decode(env.observe(env.agent_selection))
            allowed = np.flatnonzero(env.observe(env.agent_selection)["action_mask"][1:])
            env.step(int(allowed[np.argmin(obs.slots_left[allowed])]) + 1 if allowed.size else 0)
            if env.agents and obs.globals["time"] > 0.5:
                break
        envs[calibrate] = env
    plain, calibrated = (decode(envs[c].observe(envs[c].agent_selection)) for c in (False, True))
    shift = envs[True].metrics()["forecast_log_shift"]
    assert shift < -0.05  # the flow over-forecasts rl work, and tasks finished by mid-episode say so
    valid = plain.forecast_valid & (plain.remaining("p50") < MAX_REMAINING)
    assert valid.any()
    np.testing.assert_allclose(calibrated.remaining("p50")[valid], plain.remaining("p50")[valid] * math.exp(shift),
                               rtol=1e-4)  # fmt: skip
    assert "forecast_log_shift" not in envs[False].metrics()
    envs[True].reset(seed=4)
    assert envs[True].metrics()["forecast_log_shift"] == 0.0  # a new episode starts unbiased


@pytest.mark.parametrize("forecaster", ["none", "oracle"])
def test_calibration_is_refused_where_there_is_nothing_to_calibrate(forecaster):
    with pytest.raises(ValueError, match="calibrate_forecasts"):
        mara_env.raw_env(forecaster=forecaster, calibrate_forecasts=True)


def test_calibration_of_a_truth_reading_object_and_a_non_bool_flag_are_refused():
    with pytest.raises(ValueError, match="calibrate_forecasts"):
        mara_env.raw_env(forecaster=OracleForecaster(), calibrate_forecasts=True)
    with pytest.raises(ValueError, match="calibrate_forecasts must be True or False"):
        mara_env.raw_env(calibrate_forecasts="yes")


def test_a_policy_trained_calibrated_asks_for_it_and_one_trained_plain_does_not():
    calibrated = EnvRequirements.trained_on({"forecaster": "flow", "history_window": 8, "calibrate_forecasts": True})
    assert calibrated.settings == {"history_window": 8, "calibrate_forecasts": True}
    assert "calibrate_forecasts" not in EnvRequirements.trained_on({"history_window": 8}).settings


def test_schedulers_without_forecasts_play_a_calibrated_request_without_forecasts():
    # edf reads no forecasts: it plays on forecaster="none", so there is nothing to calibrate
    assert "calibrate_forecasts" not in env_config(load_agent("edf"), {"calibrate_forecasts": True})
    assert env_config(load_agent("srw"), {"calibrate_forecasts": True})["calibrate_forecasts"] is True


def test_train_mara_calibrate_forecasts_reaches_every_scenario(monkeypatch):
    config = _train_mara_config(monkeypatch, "--generalist", "--calibrate-forecasts")
    assert config.env["calibrate_forecasts"] is True and config.scenarios.fixed["calibrate_forecasts"] is True
    assert "calibrate_forecasts" not in _train_mara_config(monkeypatch, "--generalist").scenarios.fixed
    with pytest.raises(SystemExit, match="--calibrate-forecasts needs forecasts"):
        _train_mara_config(monkeypatch, "--calibrate-forecasts", "--forecaster", "none")


def test_a_calibrated_env_passes_pettingzoos_api_and_seed_tests():
    from pettingzoo.test import api_test, seed_test

    def make():
        return mara_env.env(num_nodes=4, max_tasks=8, horizon=60, workload="rl", calibrate_forecasts=True)

    api_test(make(), num_cycles=200)
    seed_test(make, num_cycles=200)
