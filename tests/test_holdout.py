"""Augmentation, conformal calibration and the leave-one-family-out helpers of the flow forecaster."""

import json

import numpy as np
import pytest

from mara_env.forecast.augment import TRANSFORMS, augment
from mara_env.forecast.calibration import apply_calibration, fit_from_quantiles
from mara_env.forecast.holdout import format_summary, holdout_families, summarise
from mara_env.forecast.train import resolve_banks


@pytest.mark.parametrize("name", sorted(TRANSFORMS))
def test_augmentations_keep_curves_positive_and_their_length(name):
    rng = np.random.default_rng(0)
    curve = 2.0 * np.arange(1, 101) ** -0.5
    for _ in range(20):
        out = TRANSFORMS[name](curve, rng)
        assert out.shape == curve.shape and np.all(out > 0) and np.all(np.isfinite(out))
    assert augment(curve, rng, 0.0) is curve


def test_drop_lowers_the_rest_of_the_curve():
    from mara_env.forecast.augment import drop

    curve = np.ones(100)
    out = drop(curve, np.random.default_rng(1))
    assert out[0] == 1.0 and out[-1] < 0.95 and np.all(np.diff(out) <= 1e-12)


def test_calibration_reaches_80_percent_coverage_and_removes_the_median_bias():
    rng = np.random.default_rng(0)
    n = 4000
    p50 = np.exp(rng.normal(3.0, 1.0, n))
    quantiles = np.column_stack([p50 * 0.8, p50, p50 * 1.25])  # far too narrow
    truth = p50 * np.exp(rng.normal(0.5, 0.7, n))  # and biased low
    cal = fit_from_quantiles(quantiles, truth)
    assert cal["shift"] == pytest.approx(0.5, abs=0.05) and cal["widen"] > 2.0
    samples = p50[:, None] * np.exp(np.linspace(-0.5, 0.5, 33))[None, :] * 1.0
    fixed = apply_calibration(samples, cal)
    q = np.quantile(fixed, [0.1, 0.5, 0.9], axis=1).T
    assert np.median(np.log(q[:, 1] / p50)) == pytest.approx(cal["shift"], abs=1e-6)
    assert apply_calibration(samples, None) is samples
    plain = fit_from_quantiles(quantiles, truth, use_shift=False)
    assert plain["shift"] == 0.0 and plain["widen"] > cal["widen"]  # the bias is absorbed by widening


def test_bank_selection_and_holdout_names_are_checked():
    assert "gbt" not in resolve_banks(["all"], exclude=["gbt"]) and "synthetic" in resolve_banks(["all"])
    with pytest.raises(ValueError, match="banks must be"):
        resolve_banks(["imagenet"])
    with pytest.raises(ValueError, match="no bank left"):
        resolve_banks(["gbt"], exclude=["gbt"])
    assert len(holdout_families("all")) >= 6 and holdout_families("seq") == ["seq"]
    with pytest.raises(ValueError, match="holdout family must be"):
        holdout_families("synthetic")


def test_summary_checks_the_acceptance_bar():
    rows = [
        {"workload": "x", "forecaster": f, "prefix": p, "median_abs_log_ratio": e, "coverage": c}
        for p in (0.1, 0.25, 0.5)
        for f, e, c in (("flow", 0.5, 0.8), ("wls", 1.0, 0.3), ("dkf", 0.7, 0.9))
    ]
    (s,) = summarise(rows)
    assert s["error_ok"] and s["coverage_ok"] and s["flow_error"] == pytest.approx(0.5)
    # 0.65 / 0.8 / 0.95: 0.8 over the family's cases, outside the band at two prefixes
    for r, c in zip([r for r in rows if r["forecaster"] == "flow"], (0.65, 0.8, 0.95)):
        r["coverage"] = c
    (s,) = summarise(rows)
    assert s["coverage_ok"] and not s["coverage_ok_every_prefix"] and s["flow_coverage"] == pytest.approx(0.8)
    assert "0.80 (0.65-0.95) | yes / yes (no)" in format_summary([s])
    rows[0]["median_abs_log_ratio"] = 1.25  # flow's mean error 0.75: within 0.8 x wls (0.8), above dkf (0.7)
    assert not summarise(rows)[0]["error_ok"]
    rows[0]["median_abs_log_ratio"] = 0.5
    for r in rows:
        if r["forecaster"] == "wls":
            r["median_abs_log_ratio"] = 0.6  # flow 0.5 is above 0.8 x 0.6 = 0.48
    assert not summarise(rows)[0]["error_ok"]


def test_batched_sampler_encodes_prefixes_exactly_like_prediction():
    from mara_env.forecast.flow import encode_prefix, future_grid
    from mara_env.forecast.sampler import TrajectorySampler

    rng = np.random.default_rng(0)
    curves = [np.exp(rng.normal(0, 0.05, n)) * np.arange(1, n + 1) ** -0.4 for n in (9, 40, 150, 400)]
    sampler = TrajectorySampler(curves, np.random.default_rng(1))
    c, stride, end = sampler.draw(200)
    cond, z, mask = sampler.examples(c, stride, end)
    for k in range(200):
        raw = curves[c[k]]
        index = np.arange(end[k], 0, -stride[k])[:16][::-1]
        expected, log_ref = encode_prefix(index.astype(float), raw[index], float(raw[0]))
        np.testing.assert_allclose(cond[k], expected, rtol=1e-5, atol=1e-5)
        future = np.floor(end[k] * (1.0 + future_grid())).astype(int)
        best = np.minimum.accumulate(raw)[np.minimum(future, raw.size - 1)]
        np.testing.assert_allclose(z[k], np.log(best) - log_ref, rtol=1e-5, atol=1e-5)
        np.testing.assert_array_equal(mask[k], future <= raw.size - 1)
    assert len(TrajectorySampler(curves, np.random.default_rng(1), strength=1.0, copies=2)) == 12


def test_synthetic_share_sets_the_share_of_training_curves():
    from mara_env.forecast.train import curves_of

    mixed = curves_of(["synthetic", "gbt", "tabular"], "train", synthetic_share=0.5)
    synthetic = curves_of(["synthetic"], "train")
    assert abs(len(synthetic) / len(mixed) - 0.5) < 0.05
    with pytest.raises(ValueError, match=r"must be in \(0, 1\)"):
        curves_of(["synthetic", "gbt"], "train", synthetic_share=1.5)


def test_named_shares_and_their_parsing():
    from mara_env.forecast.train import _parse_shares, curves_of

    mixed = curves_of(["synthetic", "gbt", "tabular"], "train", shares={"gbt": 0.5})
    gbt = curves_of(["gbt"], "train")
    assert abs(sum(any(c is g for g in gbt) for c in mixed) / len(mixed) - 0.5) < 0.05
    assert _parse_shares(["vision=0.15"]) == {"vision": 0.15} and _parse_shares([]) is None
    with pytest.raises(ValueError, match="BANK=FRACTION"):
        _parse_shares(["vision"])


def test_write_report_leaves_markdown_and_json_beside_each_other(tmp_path, capsys):
    from mara_env.forecast.evaluation import write_report

    out = tmp_path / "deep" / "report"
    write_report(out, "| a |\n|---|", [{"a": 1}])
    assert (tmp_path / "deep" / "report.md").read_text() == "| a |\n|---|\n"
    assert json.loads((tmp_path / "deep" / "report.json").read_text()) == [{"a": 1}]
    assert "| a |" in capsys.readouterr().out
