import subprocess
import sys
import types
from dataclasses import replace

import pytest
import torch

import accelbench.devices
from accelbench.devices import (
    BACKENDS,
    BASELINE_DEVICE,
    OUT_OF_MEMORY,
    PREFERENCE,
    Device,
    DeviceBackend,
    DtypeSupport,
    discover,
    find_device,
    is_baseline,
    is_out_of_memory,
    mentions_out_of_memory,
    pick_device,
    resolve_devices,
    set_tf32,
    tf32,
)
from accelbench.devices.cpu import CpuBackend
from accelbench.devices.discovery import _registry
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
    with pytest.raises(
        DeviceError, match="unknown device .* valid: cpu, cuda, cuda:N, mps, xpu, xpu:N, all "
    ):
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


@pytest.mark.parametrize(
    "modules",
    ["accelbench.devices", "accelbench.devices.kinds", "accelbench.devices.host"],
)
def test_the_package_and_its_torch_free_modules_do_not_import_torch(modules):
    code = (
        f"import sys, {modules}\n"
        "from accelbench.devices import BASELINE_DEVICE, PREFERENCE, is_baseline, cpu_model\n"
        "from accelbench.devices import mentions_out_of_memory\n"
        "cpu_model()\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_every_exported_name_loads_and_unknown_names_raise():
    assert set(accelbench.devices.__all__) == set(accelbench.devices._EXPORTS)
    for name in accelbench.devices.__all__:
        assert getattr(accelbench.devices, name) is not None, name
    with pytest.raises(AttributeError, match="no attribute 'gpu'"):
        accelbench.devices.gpu  # noqa: B018


def test_every_preferred_kind_has_one_backend_and_duplicates_are_refused():
    assert sorted(BACKENDS) == sorted(PREFERENCE)
    assert all(kind == backend.kind for kind, backend in BACKENDS.items())
    with pytest.raises(ValueError, match="'cpu' is registered twice"):
        _registry(CpuBackend(), CpuBackend())

    class Tpu(DeviceBackend):
        kind = "tpu"

    with pytest.raises(ValueError, match="'tpu'"):
        _registry(Tpu())


def test_the_baseline_is_a_device_every_machine_has():
    assert is_baseline(BASELINE_DEVICE) and is_baseline("cpu")
    assert not is_baseline("cuda:0") and not is_baseline("mps")
    baseline = find_device(BASELINE_DEVICE)
    assert baseline.available and baseline.is_host


def test_out_of_memory_errors_are_told_from_other_errors():
    assert is_out_of_memory(torch.cuda.OutOfMemoryError("CUDA out of memory"))
    if hasattr(torch, "OutOfMemoryError"):  # PyTorch 2.5 and later: every device's allocator
        assert is_out_of_memory(torch.OutOfMemoryError("out of memory"))
    assert not is_out_of_memory(RuntimeError("CUDA out of memory"))  # a message is not the type
    try:
        raise torch.cuda.OutOfMemoryError("Tried to allocate 80 GiB")
    except OUT_OF_MEMORY as caught:
        assert "80 GiB" in str(caught)


@pytest.mark.parametrize(
    ("message", "memory"),
    [
        ("DefaultCPUAllocator: can't allocate memory: you tried to allocate 80 GB", True),
        ("CUDA out of memory. Tried to allocate 2.00 GiB", True),
        ("the worker was killed by SIGKILL", True),
        ("mat1 and mat2 shapes cannot be multiplied", False),
        ("", False),
    ],
)
def test_out_of_memory_is_read_from_a_stored_message(message, memory):
    assert mentions_out_of_memory(message) is memory


def _tf32_switches():
    return (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)


def test_tf32_switches_both_products_and_the_block_restores_the_callers_setting():
    before = _tf32_switches()
    try:
        set_tf32(True)
        assert _tf32_switches() == (True, True)
        with tf32(False):
            assert _tf32_switches() == (False, False)
        assert _tf32_switches() == (True, True)
        set_tf32(False)
        with pytest.raises(RuntimeError), tf32(True):
            assert _tf32_switches() == (True, True)
            raise RuntimeError("the block failed")
        assert _tf32_switches() == (False, False)  # restored even after an error
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = before


def _fake_gpu(index=0):
    return Device(f"cuda:{index}", "cuda", True, "", index=index, backend=BACKENDS["cuda"])


def test_autocast_type_names_the_device_type_autocast_takes():
    cpu = find_device("cpu")
    assert cpu.autocast_type == "cpu"
    assert _fake_gpu(1).autocast_type == "cuda"
    with torch.autocast(cpu.autocast_type, dtype=torch.bfloat16):
        assert torch.mm(torch.ones(2, 2), torch.ones(2, 2)).dtype == torch.bfloat16


def test_host_and_accelerators_are_told_apart_by_their_backend():
    assert find_device("cpu").is_host
    assert not _fake_gpu().is_host
    assert not find_device("mps").is_host and not find_device("xpu").is_host


class _TwoGpus(DeviceBackend):
    """An indexed backend with two GPUs, standing in for CUDA on a machine without one."""

    kind = "cuda"

    def discover(self):
        return [Device(f"cuda:{i}", "cuda", True, "", index=i, backend=self) for i in (0, 1)]


def test_each_data_parallel_rank_gets_the_next_gpu_and_all_share_the_cpu():
    cpu = find_device("cpu")
    assert cpu.for_rank(3) is cpu and cpu.ddp_device_ids() is None
    first = _TwoGpus().discover()[0]
    second = first.for_rank(1)
    assert second.name == "cuda:1" and second.ddp_device_ids() == [1]
    with pytest.raises(DeviceError, match="'cuda:2' is not available here: cuda has no device 2"):
        first.for_rank(2)


def test_a_faked_xpu_build_without_xpu_says_so(monkeypatch):
    monkeypatch.delattr(torch, "xpu", raising=False)
    (xpu,) = BACKENDS["xpu"].discover()
    assert not xpu.available and xpu.reason == "this PyTorch was built without XPU"


def test_a_device_without_counters_reports_none_and_says_why():
    quiet = replace(find_device("cpu"), backend=_TwoGpus())
    assert quiet.peak_memory().bytes is None
    assert "no power counter for cuda" in quiet.power_meter().unavailable_reason
    with pytest.raises(DeviceError, match="cuda cannot capture graphs"):
        quiet.capture_graph(lambda: None)


def test_a_faked_mac_describes_its_gpu_as_the_chip_with_unified_memory(monkeypatch):
    import accelbench.devices.mps as mps

    monkeypatch.setattr(sys, "platform", "darwin")
    monkeypatch.setattr(torch.backends.mps, "is_built", lambda: True)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: True)
    monkeypatch.setattr(torch.mps, "recommended_max_memory", lambda: 24 * 2**30)
    monkeypatch.setattr(mps, "cpu_model", lambda: "Apple M2 Max")
    monkeypatch.setattr(mps, "macos_major", lambda: 13)  # bf16 needs macOS 14
    (device,) = BACKENDS["mps"].discover()
    assert (device.name, device.kind, device.available, device.model) == (
        "mps",
        "mps",
        True,
        "Apple M2 Max",
    )
    assert device.total_memory == 24 * 2**30 and device.dtypes.names() == ["fp32", "fp16"]
    assert device.autocast_type == "mps" and device.for_rank(1) is device
    assert device.ddp_device_ids() is None and "no Mac" in device.caveat


def test_a_faked_intel_gpu_is_numbered_and_names_its_driver(monkeypatch):
    props = types.SimpleNamespace(
        name="Intel Arc A770", total_memory=16 * 2**30, driver_version="1.3"
    )
    fake = types.SimpleNamespace(
        _is_compiled=lambda: True,
        is_available=lambda: True,
        device_count=lambda: 2,
        get_device_properties=lambda index: props,
        is_bf16_supported=lambda: True,
    )
    monkeypatch.setattr(torch, "xpu", fake, raising=False)
    devices = BACKENDS["xpu"].discover()
    assert [d.name for d in devices] == ["xpu:0", "xpu:1"] and devices[1].index == 1
    assert devices[1].model == "Intel Arc A770" and dict(devices[1].details) == {"driver": "1.3"}
    assert devices[0].dtypes.names() == ["fp32", "fp16", "bf16"]
    assert devices[0].dist_backend == "xccl" and devices[1].ddp_device_ids() == [1]
