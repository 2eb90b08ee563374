"""Damaged, tampered and crafted weights files are refused before they are used."""

import resource
import shutil
import time
from pathlib import Path

import pytest
import torch

from mara_agents.mara.checkpoint import FORMAT, load_checkpoint
from mara_agents.mara.network import MARANet
from mara_env import integrity
from mara_env.forecast.flow_net import load_flow_net
from mara_env.safe_load import load_tensor_file, non_finite_tensors

SHIPPED_MARA = Path(integrity.ROOT) / "mara_agents" / "mara" / "weights" / "mara.pt"
SHIPPED_FLOW = Path(integrity.ROOT) / "mara_env" / "forecast" / "weights" / "flow.pt"


def shipped_blob() -> dict:
    return torch.load(SHIPPED_MARA, map_location="cpu", weights_only=True)


def test_every_shipped_file_matches_the_manifest():
    assert integrity.check_all() == []
    listed = integrity.read_manifest()
    shipped = ("mara", "mara_generalist", "mara_generalist_fifth", "mara_generalist_ninth", "mara_generalist_thirtieth")
    weights = {f"mara_agents/mara/weights/{name}.pt" for name in shipped}
    forecasters = {f"mara_env/forecast/weights/{name}.pt" for name in ("flow", "flow_situ")}
    assert set(listed) == weights | forecasters
    assert integrity.main([]) == 0


def test_the_shipped_weights_load():
    net, env, _ = load_checkpoint(SHIPPED_MARA)
    assert isinstance(net, MARANet) and env["num_nodes"] == 8
    assert load_flow_net(SHIPPED_FLOW) is not None


@pytest.fixture
def shipped_copy(tmp_path, monkeypatch):
    """A private copy of the package's weights folders and manifest, so a byte can be flipped safely."""
    for folder in integrity.SHIPPED_DIRS:
        shutil.copytree(integrity.ROOT / folder, tmp_path / folder)
    monkeypatch.setattr(integrity, "ROOT", tmp_path)
    monkeypatch.setattr(integrity, "MANIFEST", tmp_path / "manifest.json")
    integrity.write_manifest()
    return tmp_path


@pytest.mark.parametrize("name", ["mara_agents/mara/weights/mara.pt", "mara_env/forecast/weights/flow.pt"])
def test_one_flipped_byte_in_a_shipped_file_is_caught(shipped_copy, name):
    path = shipped_copy / name
    assert integrity.verify_if_shipped(path)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))
    with pytest.raises(ValueError, match="do not match their SHA-256 digest") as info:
        integrity.verify_if_shipped(path)
    assert name.split("/")[-1] in str(info.value) and "python -m mara_env.integrity --write" in str(info.value)
    with pytest.raises(ValueError, match="SHA-256"):
        load_tensor_file(path, "any", "weights")
    assert integrity.check_all() != []


def test_a_shipped_file_missing_from_the_manifest_is_refused(shipped_copy):
    extra = shipped_copy / "mara_agents/mara/weights/other.pt"
    shutil.copy(shipped_copy / "mara_agents/mara/weights/mara.pt", extra)
    with pytest.raises(ValueError, match="not in the manifest"):
        integrity.verify_if_shipped(extra)
    integrity.write_manifest()  # what a retrain on purpose does
    assert integrity.verify_if_shipped(extra)


def test_user_files_are_not_in_the_manifest_and_load(tmp_path):
    path = tmp_path / "mine.pt"
    shutil.copy(SHIPPED_MARA, path)
    assert not integrity.verify_if_shipped(path)
    load_checkpoint(path)


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf")])
def test_non_finite_weights_are_refused(tmp_path, value):
    blob = shipped_blob()
    blob["state_dict"]["pointer.weight"][0, 3] = value
    path = tmp_path / "bad.pt"
    torch.save(blob, path)
    with pytest.raises(ValueError, match=r"non-finite values .* state_dict\.pointer\.weight"):
        load_checkpoint(path)


def test_non_finite_flow_weights_are_refused(tmp_path):
    blob = torch.load(SHIPPED_FLOW, map_location="cpu", weights_only=True)
    name = next(k for k, v in blob["state_dict"].items() if v.is_floating_point())
    blob["state_dict"][name].view(-1)[0] = float("nan")
    path = tmp_path / "flow.pt"
    torch.save(blob, path)
    with pytest.raises(ValueError, match="non-finite"):
        load_flow_net(path)


def test_non_finite_tensors_are_found_anywhere():
    blob = {"a": [torch.zeros(2), {"b": torch.tensor([1.0, float("nan")])}], "c": torch.arange(3)}
    assert non_finite_tensors(blob) == ["a.1.b"]


def crafted(tmp_path: Path, **config) -> Path:
    """A small checkpoint (the shipped tensors) whose config asks for something else."""
    blob = shipped_blob()
    blob["config"] = {**blob["config"], **config}
    path = tmp_path / "crafted.pt"
    torch.save(blob, path)
    return path


@pytest.mark.parametrize(
    "config, message",
    [
        ({"layers": 100_000}, r"layers must be an integer in \[1, 16\], got 100000"),
        ({"width": 10**7}, r"width must be an integer in \[4, 1024\]"),
        ({"heads": 0}, "heads must be an integer"),
        ({"history_window": 10**9}, "history_window must be an integer"),
        ({"layers": 2.0}, "layers must be an integer"),
        ({"autoregressive": "yes"}, "autoregressive must be True or False"),
        ({"width": 66}, r"width \(66\) must be a multiple of heads \(4\)"),
        ({"extra_key": 1}, "config must have the keys"),
    ],
)
def test_crafted_configs_are_refused_before_anything_is_built(tmp_path, config, message):
    path = crafted(tmp_path, **config)
    assert path.stat().st_size < 600_000
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    with pytest.raises(ValueError, match=message):
        load_checkpoint(path)
    assert time.perf_counter() - start < 2.0
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 100_000  # kB: nothing big allocated


@pytest.mark.parametrize(
    "config, message",
    [
        ({"layers": 3}, "missing"),  # the config wants a third layer the file does not hold
        ({"width": 128}, "tensor shapes do not match"),
        ({"history_window": 16}, r"actor_rows\.window\.0\.weight \(64, 16\) \(expected \(64, 32\)\)"),
    ],
)
def test_configs_that_do_not_fit_the_tensors_are_refused(tmp_path, config, message):
    with pytest.raises(ValueError, match=message):
        load_checkpoint(crafted(tmp_path, **config))


def test_a_state_dict_of_non_tensors_is_refused(tmp_path):
    blob = shipped_blob()
    blob["state_dict"] = {"pointer.weight": [1, 2, 3]}
    path = tmp_path / "odd.pt"
    torch.save(blob, path)
    with pytest.raises(ValueError, match="state_dict must map names to tensors"):
        load_checkpoint(path)


def test_a_directory_is_named(tmp_path):
    with pytest.raises(ValueError, match="is a directory"):
        load_tensor_file(tmp_path, FORMAT, "MARA checkpoint")
