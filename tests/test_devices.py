import sys

import pytest
import torch

from accelbench.devices import (
    DtypeSupport,
    discover,
    pick_device,
    resolve_devices,
)
from accelbench.errors import DeviceError


def test_every_backend_is_listed_with_cpu_available():
    devices = discover()
    kinds = [d.kind for d in devices]
    assert set(kinds) == {"cpu", "cuda", "mps", "xpu"}
    cpu = next(d for d in devices if d.kind == "cpu")
    assert cpu.available and cpu.reason == "" and cpu.model
    assert cpu.total_memory and cpu.total_memory > 0
    for d in devices:
        assert d.available or d.reason, f"{d.name} is unavailable without a reason"


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is present")
def test_cuda_without_a_gpu_says_why():
    cuda = next(d for d in discover() if d.kind == "cuda")
    assert not cuda.available
    assert "CUDA" in cuda.reason or "built without" in cuda.reason


@pytest.mark.skipif(sys.platform == "darwin", reason="on a Mac MPS may be available")
def test_mps_off_macos_says_it_needs_macos():
    mps = next(d for d in discover() if d.kind == "mps")
    assert not mps.available
    assert "macOS 12.3" in mps.reason


def test_resolve_all_and_names():
    assert [d.name for d in resolve_devices("cpu")] == ["cpu"]
    assert [d.name for d in resolve_devices("cpu, cpu")] == ["cpu"]
    assert "cpu" in [d.name for d in resolve_devices("all")]


@pytest.mark.parametrize("name", ["tpu", "cuda:x", "cpu:1", "gpu"])
def test_unknown_device_names_the_valid_choices(name):
    with pytest.raises(DeviceError, match="unknown device .* valid: cpu, cuda, cuda:N, mps"):
        resolve_devices(name)


@pytest.mark.skipif(sys.platform == "darwin", reason="on a Mac MPS may be available")
def test_unavailable_device_gives_the_reason_and_what_is_available():
    with pytest.raises(
        DeviceError, match=r"'mps' is not available here: MPS needs macOS.*available: .*cpu"
    ):
        resolve_devices("mps")


def test_pick_device_prefers_argument_then_environment(monkeypatch):
    monkeypatch.delenv("ACCELBENCH_DEVICE", raising=False)
    best = pick_device()
    first_available = next(d for d in discover() if d.available)  # discover() is best first
    assert best.available and best.name == first_available.name
    if torch.cuda.is_available():
        assert best.kind == "cuda"
    monkeypatch.setenv("ACCELBENCH_DEVICE", "cpu")
    assert pick_device().name == "cpu"
    monkeypatch.setenv("ACCELBENCH_DEVICE", "tpu")
    with pytest.raises(DeviceError):
        pick_device()
    assert pick_device("cpu").name == "cpu"


def test_cpu_timer_and_peak_memory_are_real():
    cpu = resolve_devices("cpu")[0]
    cpu.reset_peak_memory()
    before = cpu.peak_memory().bytes
    timer = cpu.timer()
    timer.start()
    block = torch.ones(8192, 8192)  # 256 MiB, written: resident
    block.add_(1)
    timer.stop()
    assert timer.elapsed() > 0
    reading = cpu.peak_memory()
    assert "RSS" in reading.meaning
    assert reading.bytes is not None and before is not None
    assert reading.bytes - before >= 200 * 2**20  # the allocation shows in the peak
    del block


def test_dtype_names():
    assert DtypeSupport(fp16=True, bf16=False, tf32=True).names() == ["fp32", "tf32", "fp16"]


def test_unverified_backends_carry_a_caveat_and_verified_ones_none():
    by_kind = {d.kind: d for d in discover()}
    assert "no Mac" in by_kind["mps"].caveat
    assert "no Intel GPU" in by_kind["xpu"].caveat
    assert by_kind["cpu"].caveat == ""
    assert by_kind["mps"].to_dict()["caveat"] == by_kind["mps"].caveat
