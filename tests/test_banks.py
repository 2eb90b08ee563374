"""Curve banks: the shipped format, splits, the resumable build driver and the tiny real rebuilds."""

import json

import numpy as np
import pytest

from mara_env.workloads import build as build_module
from mara_env.workloads.bank import BANK_DIR, SPLITS, CurveBank, read_bank, save_bank, split_of_key
from mara_env.workloads.recorded import NEW_BANKS, RECORDED_BANKS, load_bank

SHIPPED = RECORDED_BANKS
MIN_CURVES = {"vision": 300, "rl": 150, **{name: 150 for name in NEW_BANKS}}


def toy_bank(n=5) -> CurveBank:
    steps = [np.arange(1.0, 11.0)] * n
    losses = [np.linspace(2.0, 1.0, 10) * (1 + 0.01 * i) for i in range(n)]
    meta = [{"key": f"toy/{i}", "family": "toy"} for i in range(n)]
    return CurveBank("toy", steps, losses, meta, {"loss": "toy"})


def test_save_and_read_round_trip(tmp_path):
    path = save_bank(toy_bank(), tmp_path / "toy.npz")
    bank = read_bank(path)
    assert len(bank) == 5 and bank.name == "toy" and bank.info["loss"] == "toy"
    np.testing.assert_allclose(bank.losses[3], toy_bank().losses[3], rtol=1e-6)
    assert [m["key"] for m in bank.meta] == [f"toy/{i}" for i in range(5)]


def test_corrupt_truncated_and_foreign_files_are_refused(tmp_path):
    path = save_bank(toy_bank(), tmp_path / "toy.npz")
    data = path.read_bytes()
    (tmp_path / "truncated.npz").write_bytes(data[: len(data) // 2])
    (tmp_path / "garbage.npz").write_bytes(b"not a zip file at all")
    np.savez(tmp_path / "foreign.npz", x=np.ones(3))
    for name in ("truncated.npz", "garbage.npz", "foreign.npz"):
        with pytest.raises(ValueError, match="corrupt or not a bank"):
            read_bank(tmp_path / name)
    with pytest.raises(ValueError, match="does not exist"):
        read_bank(tmp_path / "missing.npz")


def test_bad_curves_are_refused_before_writing(tmp_path):
    bad = toy_bank()
    bad.losses[1][4] = -1.0
    with pytest.raises(ValueError, match="curve 1 losses must be finite and > 0"):
        save_bank(bad, tmp_path / "bad.npz")
    assert not (tmp_path / "bad.npz").exists()


def test_split_of_key_is_a_pure_function_of_the_key():
    # Pinned: a curve's split must never change between versions.
    pinned = ["train", "test", "train", "train", "val", "train", "test", "train"]
    assert [split_of_key(f"synthetic/index={i}") for i in range(8)] == pinned


@pytest.mark.parametrize("name", ["synthetic", *SHIPPED])
def test_splits_are_disjoint_cover_and_near_70_15_15(name):
    bank = load_bank(name)
    parts = {s: bank.split(s) for s in SPLITS}
    keys = {s: {m["key"] for m in p.meta} for s, p in parts.items()}
    assert sum(len(p) for p in parts.values()) == len(bank)
    assert not (keys["train"] & keys["val"] or keys["train"] & keys["test"] or keys["val"] & keys["test"])
    assert abs(len(parts["train"]) / len(bank) - 0.70) < 0.08
    assert len(parts["test"]) >= 0.08 * len(bank)


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_banks_meet_the_spec(name):
    path = BANK_DIR / f"{name}.npz"
    assert path.stat().st_size < 6_000_000
    bank = read_bank(path)
    assert len(bank) >= MIN_CURVES[name]
    if name == "vision":
        assert min(len(y) for y in bank.losses) >= 100
    for m in bank.meta:
        assert {"key", "family", "seed", "config", "wall_time", "x_unit"} <= m.keys()
    assert bank.info["command"].startswith(f"python -m mara_env.workloads.build {name}")


def test_shipped_banks_fit_the_storage_budget():
    total = sum((BANK_DIR / f"{n}.npz").stat().st_size for n in SHIPPED)
    assert total <= 30 * 1024 * 1024
    assert sum(len(load_bank(n)) for n in NEW_BANKS) >= 1200


def test_build_writes_to_the_named_folder_and_installs_only_when_asked(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shipped = tmp_path / "package_data"
    monkeypatch.setattr(build_module, "BANK_DIR", shipped)
    monkeypatch.setattr(build_module, "BUILDERS", (*build_module.BUILDERS, "_toy"))
    assert build_module.main(["_toy", "--size", "tiny", "--quiet"]) == 0
    assert (tmp_path / "runs" / "banks" / "_toy.npz").is_file() and not shipped.exists()
    assert build_module.main(["_toy", "--size", "tiny", "--quiet", "--out", "elsewhere"]) == 0
    assert (tmp_path / "elsewhere" / "_toy.npz").is_file() and not shipped.exists()
    assert build_module.main(["_toy", "--size", "tiny", "--quiet", "--install"]) == 0
    assert len(read_bank(shipped / "_toy.npz")) == 3


def test_build_driver_resumes_after_an_interruption(tmp_path, monkeypatch):
    out = tmp_path / "toy.npz"
    calls = []
    real_run = build_module._run_one

    def flaky(name, config):
        if len(calls) == 2:
            raise KeyboardInterrupt  # the third run is interrupted
        calls.append(config["key"])
        return real_run(name, config)

    monkeypatch.setattr(build_module, "_run_one", flaky)
    with pytest.raises(KeyboardInterrupt):
        build_module.build("_toy", "full", out, progress=False)
    assert not out.exists() and len(list((tmp_path / "toy.npz.partial").glob("*.npz"))) == 2
    calls.clear()
    monkeypatch.setattr(build_module, "_run_one", lambda n, c: (calls.append(c["key"]), real_run(n, c))[1])
    build_module.build("_toy", "full", out, progress=False)
    assert len(calls) == 4  # only the 4 runs not done before
    bank = read_bank(out)
    assert len(bank) == 6 and not (tmp_path / "toy.npz.partial").exists()


@pytest.mark.parametrize("name", SHIPPED)
def test_tiny_rebuild_has_the_shipped_format(tmp_path, name):
    out = build_module.build(name, "tiny", tmp_path / f"{name}.npz", progress=False)
    tiny, shipped = read_bank(out), read_bank(BANK_DIR / f"{name}.npz")
    with np.load(out, allow_pickle=False) as a, np.load(BANK_DIR / f"{name}.npz", allow_pickle=False) as b:
        assert sorted(a.files) == sorted(b.files)
        assert all(a[k].dtype.kind == b[k].dtype.kind and a[k].ndim == b[k].ndim for k in a.files)
    assert set(tiny.info) == set(shipped.info)
    assert set(tiny.meta[0]) == set(shipped.meta[0])
    assert json.loads(json.dumps(tiny.meta)) == tiny.meta
    assert tiny.info["size"] == "tiny" and len(tiny) >= 2


def test_unknown_bank_and_missing_bank_errors(monkeypatch, tmp_path):
    with pytest.raises(ValueError, match="bank must be one of"):
        load_bank("imagenet")
    from mara_env.workloads import recorded

    monkeypatch.setattr(recorded, "BANK_DIR", tmp_path)
    recorded._stored_bank.cache_clear()
    try:
        with pytest.raises(ValueError, match="python -m mara_env.workloads.build vision"):
            recorded._stored_bank("vision")
    finally:
        recorded._stored_bank.cache_clear()
