"""The in-situ head of ``flow_situ`` (mara_env.forecast.situ): its features, its refinement of the
flow's answer, its fit, its weights file, and the cases it is fitted on."""

import sys
from pathlib import Path

import numpy as np
import pytest

from mara_env import raw_env
from mara_env.forecast import MAX_REMAINING, Forecast, make, situ
from mara_env.forecast import head as qh
from tests.scripts import run_script

ROOT = Path(__file__).resolve().parents[1]


def constant_head(offsets=(-0.5, 0.2, 0.9)) -> dict:
    """A head that ignores its inputs and answers ``offsets`` from the median."""
    k, hidden = len(situ.SITU_FEATURES), qh.HIDDEN
    head = {"kind": situ.KIND, "features": list(situ.SITU_FEATURES), "mean": np.zeros(k), "scale": np.ones(k)}
    for i, (rows, cols) in enumerate([(hidden, k), (hidden, hidden), (3, hidden)], start=1):
        head[f"w{i}"], head[f"b{i}"] = np.zeros((rows, cols)), np.zeros(rows)
    head["b3"] = np.array(offsets, dtype=float)
    return head


def test_features_of_an_exact_power_law_by_hand():
    work = np.arange(1.0, 11.0)
    loss = 2.0 * work**-0.5
    quantiles = np.array([[10.0, 20.0, 80.0]])
    features = dict(zip(situ.SITU_FEATURES, situ.situ_features([(work, loss)], np.array([0.2]), quantiles)[0]))
    assert features["flow_spread_low"] == pytest.approx(np.log(2.0))
    assert features["flow_spread_high"] == pytest.approx(np.log(4.0))
    assert features["points"] == pytest.approx(np.log(10.0))
    assert features["loss_gap"] == pytest.approx(np.log(2.0 * 10**-0.5 / 0.2))
    assert features["best_gap"] == pytest.approx(features["loss_gap"])  # a falling curve's best is its last
    assert features["loss_progress"] == pytest.approx(np.log(10**0.5))
    # 2 w^-0.5 = 0.2 at w = 100: 90 left after w = 10, against a median of 20
    assert features["power_law_gap"] == pytest.approx(np.log(90.0 / 20.0), rel=1e-6)
    assert features["power_law_slope"] == pytest.approx(0.5)
    assert features["recent_slope"] == pytest.approx(-0.5)


def test_refine_moves_only_refinable_tasks_and_their_samples():
    work = np.arange(1.0, 6.0)
    histories = [(work, 1.0 / work)] * 4 + [(np.array([1.0]), np.array([1.0]))]
    quantiles = np.array([[5.0, 10.0, 20.0], [0.0, 0.0, 0.0], [MAX_REMAINING] * 3, [1.0, 2.0, 3.0], [4.0, 8.0, 9.0]])
    known = np.array([True, True, True, False, True])  # done, out of reach, unknown, one point: untouched
    samples = np.sort(np.exp(np.random.default_rng(0).normal(np.log(10.0), 0.5, (5, 11))), axis=1)
    samples[0] *= 10.0 / qh.sorted_quantiles(samples[:1])[0, 1]
    quantiles[0] = qh.sorted_quantiles(samples[:1])[0]
    out = situ.refine(constant_head(), histories, np.full(5, 0.05), Forecast(quantiles, known, samples))
    np.testing.assert_allclose(out.remaining[0], 10.0 * np.exp([-0.5, 0.2, 0.9]))
    np.testing.assert_array_equal(out.remaining[1:], quantiles[1:])
    np.testing.assert_array_equal(out.samples[1:], samples[1:])
    np.testing.assert_allclose(qh.sorted_quantiles(out.samples[:1])[0], out.remaining[0])


def test_refine_caps_at_the_forecasters_maximum():
    work = np.arange(1.0, 6.0)
    forecast = Forecast(np.array([[500.0, 900.0, 990.0]]), np.array([True]))
    out = situ.refine(constant_head((1.0, 2.0, 3.0)), [(work, 1.0 / work)], np.array([0.01]), forecast)
    assert np.all(out.remaining <= MAX_REMAINING) and out.remaining[0, 1] == pytest.approx(MAX_REMAINING)


def test_fit_learns_how_far_off_the_flow_is_and_refuses_too_few_cases():
    rng = np.random.default_rng(1)
    n = 5000
    features = rng.normal(0, 1, (n, len(situ.SITU_FEATURES)))
    log_median = rng.normal(2, 1, n)
    log_truth = log_median - 0.6 + 0.3 * features[:, 2] + rng.normal(0, 0.2, n)  # biased, and it depends on "points"
    head = situ.fit_situ_head({"features": features, "log_median": log_median, "log_truth": log_truth}, steps=800)
    fitted = qh.apply_head(head, features, log_median)[:, 1]
    assert np.median(np.abs(fitted - log_truth)) < 0.25 < np.median(np.abs(log_median - log_truth))
    with pytest.raises(ValueError, match="at least 100 cases"):
        situ.fit_situ_head({"features": features[:10], "log_median": log_median[:10], "log_truth": log_truth[:10]})


def test_head_file_round_trip_and_refusals(tmp_path):
    path = situ.save_head(constant_head(), tmp_path / "head.pt")
    loaded = situ.load_head(path)
    np.testing.assert_array_equal(loaded["b3"], [-0.5, 0.2, 0.9])
    (tmp_path / "cut.pt").write_bytes(path.read_bytes()[:100])
    with pytest.raises(ValueError, match="cut.pt is corrupt"):
        situ.load_head(tmp_path / "cut.pt")
    with pytest.raises(ValueError, match="does not exist; fit one"):
        situ.load_head(tmp_path / "missing.pt")
    wrong = constant_head()
    wrong["w1"] = np.zeros((qh.HIDDEN, 3))
    with pytest.raises(ValueError, match="wrong shape"):
        situ.load_head(situ.save_head(wrong, tmp_path / "wrong.pt"))
    with pytest.raises(ValueError, match="must name the features"):
        situ.load_head(situ.save_head({**constant_head(), "features": ["x"]}, tmp_path / "names.pt"))


class FixedAnswers:
    """A stand-in base forecaster: every task's answer is (5, 10, 20), known."""

    name = "fixed"

    def predict(self, histories, targets):
        return Forecast(np.tile([5.0, 10.0, 20.0], (len(histories), 1)), np.ones(len(histories), dtype=bool))


def test_the_recorder_keeps_refinable_tasks_with_their_capped_truth():
    work = np.arange(1.0, 6.0)
    histories = [(work, 1.0 / work), (np.array([1.0]), np.array([1.0])), (work, 2.0 / work)]
    recorder = situ.CaseRecorder(FixedAnswers())
    answer = recorder.predict(histories, [0.05, 0.05, 0.1], truth=[7.0, 3.0, 1e9])
    assert answer.remaining.shape == (3, 3)  # answers as its base does
    cases = recorder.cases()  # the one-point history is left out
    np.testing.assert_allclose(cases["log_truth"], np.log([7.0, MAX_REMAINING]))
    np.testing.assert_allclose(cases["log_median"], np.log([10.0, 10.0]))
    expected = situ.situ_features(
        [histories[0], histories[2]], np.array([0.05, 0.1]), np.tile([5.0, 10.0, 20.0], (2, 1))
    )
    np.testing.assert_allclose(cases["features"], expected)


def test_cases_recorded_in_play_are_finite_and_numbered_by_scenario():
    def play(recorder, scenario):
        env = raw_env(num_nodes=4, max_tasks=8, horizon=30, load="heavy", workload=scenario, forecaster=recorder)
        env.reset(seed=5)
        for agent in env.agent_iter():
            env.step(last_allowed(env, agent))

    cases = situ.record_cases(["rl", "vision"], play, base=lambda: make("flow"))
    assert cases["log_truth"].size >= 4 and np.all(np.isfinite(cases["features"]))
    assert np.all(cases["log_truth"] <= np.log(MAX_REMAINING) + 1e-9)
    assert set(cases["scenario"].tolist()) == {0, 1}


def last_allowed(env, agent):
    done = env.terminations[agent] or env.truncations[agent]
    return None if done else int(np.flatnonzero(env.observe(agent)["action_mask"])[-1])


def test_flow_situ_plays_in_the_env_and_differs_from_flow():
    settings = dict(num_nodes=4, max_tasks=8, horizon=60, load="heavy", workload="vision")
    seen = {}
    for name in ("flow", "flow_situ"):
        env = raw_env(forecaster=name, **settings)
        env.reset(seed=3)
        observations = []
        for agent in env.agent_iter():  # every node takes the last row it may: the same play under both
            observations.append(env.observe(agent)["observation"])
            env.step(last_allowed(env, agent))
        seen[name] = np.array(observations)
    assert make("flow_situ").name == "flow_situ" and make("flow_situ_fixed").name == "flow_situ_fixed"
    assert seen["flow"].shape == seen["flow_situ"].shape and not np.array_equal(seen["flow"], seen["flow_situ"])


def test_the_script_refuses_a_foreign_cases_file(tmp_path):
    np.savez(tmp_path / "foreign.npz", something=np.zeros(3))
    run = run_script(
        [
            sys.executable,
            str(ROOT / "examples" / "train_situ_head.py"),
            "--out",
            str(tmp_path / "out"),
            "--cases",
            str(tmp_path / "foreign.npz"),
            str(tmp_path / "foreign.npz"),
        ]
    )
    assert run.returncode != 0 and "foreign.npz is not a cases file" in run.stderr


def test_flow_situ_fixed_survives_a_pickle_and_answers_the_same():
    import pickle

    forecaster = make("flow_situ_fixed")
    work = np.arange(1.0, 9.0)
    histories = [(work, 2.0 * work**-0.5), (work, 1.0 / work)]
    copy = pickle.loads(pickle.dumps(forecaster))
    np.testing.assert_array_equal(
        forecaster.predict(histories, [0.3, 0.05]).remaining, copy.predict(histories, [0.3, 0.05]).remaining
    )


def test_fitting_a_head_leaves_the_global_torch_rng_alone():
    import torch

    rng = np.random.default_rng(4)
    cases = {
        "features": rng.normal(0, 1, (200, len(situ.SITU_FEATURES))),
        "log_median": np.zeros(200),
        "log_truth": rng.normal(0, 1, 200),
    }
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    first = situ.fit_situ_head(cases, seed=0, steps=20)
    assert torch.equal(torch.rand(3), expected)
    np.testing.assert_array_equal(first["w1"], situ.fit_situ_head(cases, seed=0, steps=20)["w1"])  # still seeded
