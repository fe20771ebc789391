import plistlib
import sys
import threading
import time
import types
from pathlib import Path

import pytest

from accelbench.devices.power import (
    THREAD_NAME,
    NvmlPower,
    PowerMeter,
    PowermetricsPower,
    PowerReading,
    PowerUnavailable,
    RaplPower,
    _plist_energy,
)

NEVER = 3600.0  # a poll interval that keeps the thread out of a test's way


def power_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == THREAD_NAME]


# --- RAPL against a fake powercap tree --------------------------------------------------------


def make_zone(root: Path, name: str, kind: str, energy: int, max_range: int) -> Path:
    zone = root / name
    zone.mkdir(parents=True)
    (zone / "name").write_text(f"{kind}\n")
    (zone / "energy_uj").write_text(f"{energy}\n")
    (zone / "max_energy_range_uj").write_text(f"{max_range}\n")
    return zone


def set_energy(zone: Path, energy: int) -> None:
    (zone / "energy_uj").write_text(f"{energy}\n")


@pytest.fixture
def powercap(tmp_path: Path) -> tuple[Path, Path, Path]:
    root = tmp_path / "powercap"
    pkg0 = make_zone(root, "intel-rapl:0", "package-0", 1_000_000, 262_143_328_850)
    pkg1 = make_zone(root, "intel-rapl:1", "package-1", 5_000_000, 262_143_328_850)
    # Sub-zones and psys overlap the packages and must not be added to them.
    make_zone(root, "intel-rapl:0:0", "dram", 0, 65_532_610_987)
    make_zone(root, "intel-rapl:2", "psys", 0, 262_143_328_850)
    return root, pkg0, pkg1


def test_rapl_sums_packages_exactly(powercap):
    root, pkg0, pkg1 = powercap
    source = RaplPower(root, poll=NEVER)
    assert source.available() is None
    with PowerMeter(source) as meter:
        set_energy(pkg0, 1_000_000 + 30_000_000)  # 30 J
        set_energy(pkg1, 5_000_000 + 12_500_000)  # 12.5 J
        time.sleep(0.01)
    reading = meter.reading
    assert reading is not None, meter.unavailable_reason
    assert reading.joules == pytest.approx(42.5, abs=1e-9)
    assert reading.average_watts == pytest.approx(42.5 / reading.seconds)
    assert reading.samples == 2
    assert reading.source == "RAPL package energy (intel-rapl:0 + intel-rapl:1)"
    assert meter.unavailable_reason == ""


def test_rapl_handles_a_wrapped_counter(powercap):
    root, pkg0, pkg1 = powercap
    max_range = 262_143_328_850
    set_energy(pkg0, max_range - 2_000_000)
    with PowerMeter(RaplPower(root, poll=NEVER)) as meter:
        set_energy(pkg0, 3_000_000)  # 2 J up to the top, then 3 J after wrapping
        set_energy(pkg1, 5_000_000 + 1_000_000)
    assert meter.reading is not None, meter.unavailable_reason
    assert meter.reading.joules == pytest.approx(2 + 3 + 1, abs=1e-9)


def test_rapl_polling_counts_many_wraps(tmp_path):
    # A counter that wraps every 0.2 s at 1 W: read only at the two ends it would lose joules.
    make_zone(tmp_path, "intel-rapl:0", "package-0", 0, 200_000)
    t0 = time.perf_counter()

    def reader(path: Path) -> str:
        if path.name == "energy_uj":
            return str(int((time.perf_counter() - t0) * 1e6) % 200_000)
        return path.read_text()

    with PowerMeter(RaplPower(tmp_path, poll=0.01, reader=reader)) as meter:
        time.sleep(0.5)
    reading = meter.reading
    assert reading is not None, meter.unavailable_reason
    assert reading.seconds >= 0.5
    assert reading.average_watts == pytest.approx(1.0, rel=0.02)
    assert reading.samples > 10


def test_rapl_missing_directory_names_the_path(tmp_path):
    root = tmp_path / "no-such-powercap"
    reason = RaplPower(root).available()
    assert reason is not None and str(root) in reason
    with PowerMeter(RaplPower(root)) as meter:
        pass
    assert meter.reading is None
    assert meter.unavailable_reason.startswith("power not measurable here: ")
    assert str(root) in meter.unavailable_reason


def test_rapl_without_package_zones_says_so(tmp_path):
    make_zone(tmp_path, "intel-rapl:0", "psys", 0, 100)
    reason = RaplPower(tmp_path).available()
    assert reason is not None and "no RAPL package zones" in reason


def test_rapl_unreadable_counter_names_it(powercap):
    root, pkg0, _ = powercap
    # Tests run as root, where chmod cannot make a file unreadable: make it a directory.
    (pkg0 / "energy_uj").unlink()
    (pkg0 / "energy_uj").mkdir()
    reason = RaplPower(root).available()
    assert reason is not None
    assert "not readable" in reason and str(pkg0 / "energy_uj") in reason


def test_rapl_root_only_counter_says_it_needs_root(powercap):
    root, pkg0, _ = powercap

    def reader(path: Path) -> str:
        if path.name == "energy_uj":
            raise PermissionError(13, "Permission denied", str(path))
        return path.read_text()

    reason = RaplPower(root, reader=reader).available()
    assert reason == f"RAPL energy counters are not readable: {pkg0 / 'energy_uj'} needs root"


# --- NVML, with and without a fake pynvml -----------------------------------------------------


class FakeNvml(types.ModuleType):
    """The parts of pynvml that NvmlPower uses, with a counter and a power the test controls."""

    class NVMLError(Exception):
        pass

    def __init__(self, energy: bool = True, power_mw: int = 250_000) -> None:
        super().__init__("pynvml")
        self.energy = energy
        self.energy_mj = 7_000_000
        self.power_mw = power_mw
        self.inits = 0

    def nvmlInit(self) -> None:  # noqa: N802
        self.inits += 1

    def nvmlShutdown(self) -> None:  # noqa: N802
        self.inits -= 1

    def nvmlDeviceGetHandleByIndex(self, index: int) -> int:  # noqa: N802
        if index != 0:
            raise self.NVMLError("Invalid Argument")
        return index

    def nvmlDeviceGetHandleByUUID(self, uuid: bytes) -> int:  # noqa: N802
        if uuid != b"GPU-1234":
            raise self.NVMLError("Not Found")
        return 0

    def nvmlDeviceGetTotalEnergyConsumption(self, handle: int) -> int:  # noqa: N802
        if not self.energy:
            raise self.NVMLError("Not Supported")
        return self.energy_mj

    def nvmlDeviceGetPowerUsage(self, handle: int) -> int:  # noqa: N802
        return self.power_mw


@pytest.fixture
def fake_nvml(monkeypatch) -> FakeNvml:
    fake = FakeNvml()
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    return fake


def test_nvml_without_the_package_names_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import fails as if not installed
    reason = NvmlPower(0).available()
    assert reason == (
        "nvidia-ml-py is needed for GPU power through NVML: pip install 'accelbench[power]'"
    )
    with PowerMeter(NvmlPower(0)) as meter:
        pass
    assert meter.reading is None
    assert meter.unavailable_reason == f"power not measurable here: {reason}"


def test_nvml_energy_counter_gives_exact_joules(fake_nvml):
    source = NvmlPower(0)
    assert source.available() is None
    with PowerMeter(source) as meter:
        fake_nvml.energy_mj += 123_456
        time.sleep(0.01)
    reading = meter.reading
    assert reading is not None, meter.unavailable_reason
    assert reading.joules == pytest.approx(123.456, abs=1e-9)
    assert reading.average_watts == pytest.approx(123.456 / reading.seconds)
    assert reading.samples == 2
    assert reading.source == "NVML energy counter of GPU 0 (board)"
    assert fake_nvml.inits == 0 and not power_threads()


def test_nvml_samples_power_without_an_energy_counter(fake_nvml):
    fake_nvml.energy = False
    started = time.perf_counter()
    with PowerMeter(NvmlPower(0, interval=0.01)) as meter:
        time.sleep(0.3)
    wall = time.perf_counter() - started
    reading = meter.reading
    assert reading is not None, meter.unavailable_reason
    assert reading.average_watts == pytest.approx(250.0)
    assert reading.joules == pytest.approx(250.0 * reading.seconds)
    assert 0.3 <= reading.seconds <= wall
    assert reading.samples >= 10
    assert "sampled every 10 ms" in reading.source
    assert fake_nvml.inits == 0 and not power_threads()


def test_nvml_finds_a_gpu_by_torch_uuid(fake_nvml):
    assert NvmlPower(uuid="1234").available() is None
    reason = NvmlPower(uuid="5678").available()
    assert reason is not None and "NVML has no GPU 5678" in reason


def test_nvml_gpu_without_power_readings_says_why(fake_nvml, monkeypatch):
    fake_nvml.energy = False

    def no_power(handle: int) -> int:
        raise fake_nvml.NVMLError("Not Supported")

    monkeypatch.setattr(fake_nvml, "nvmlDeviceGetPowerUsage", no_power)
    reason = NvmlPower(0).available()
    assert reason is not None and "nvmlDeviceGetPowerUsage failed: Not Supported" in reason
    assert fake_nvml.inits == 0


def test_nvml_failure_mid_run_gives_no_figure(fake_nvml, monkeypatch):
    fake_nvml.energy = False

    def gpu_lost(handle: int) -> int:
        raise fake_nvml.NVMLError("GPU is lost")

    with PowerMeter(NvmlPower(0, interval=0.01)) as meter:
        time.sleep(0.05)
        monkeypatch.setattr(fake_nvml, "nvmlDeviceGetPowerUsage", gpu_lost)
        time.sleep(0.05)
    assert meter.reading is None
    assert "power sampling failed" in meter.unavailable_reason
    assert "GPU is lost" in meter.unavailable_reason
    assert fake_nvml.inits == 0 and not power_threads()


# --- the meter --------------------------------------------------------------------------------


def test_meter_without_a_source_gives_the_reason():
    with PowerMeter(None, "no power counter for MPS without root") as meter:
        pass
    assert meter.reading is None
    assert meter.unavailable_reason == (
        "power not measurable here: no power counter for MPS without root"
    )
    with PowerMeter(None) as meter:
        pass
    assert meter.unavailable_reason.startswith("power not measurable here: ")


def test_meter_stops_its_thread_when_the_body_raises(fake_nvml):
    fake_nvml.energy = False
    meter = PowerMeter(NvmlPower(0, interval=0.01))
    with pytest.raises(RuntimeError, match="workload failed"), meter:
        assert power_threads(), "the sampler should be running inside the region"
        raise RuntimeError("workload failed")
    assert not power_threads()
    assert fake_nvml.inits == 0
    assert meter.reading is not None  # the energy up to the failure was still measured


def test_reading_to_dict_keeps_every_field():
    reading = PowerReading(100.0, 50.0, 0.5, 2, "RAPL package energy (intel-rapl:0)")
    assert reading.to_dict() == {
        "average_watts": 100.0,
        "joules": 50.0,
        "seconds": 0.5,
        "samples": 2,
        "source": "RAPL package energy (intel-rapl:0)",
    }


# --- powermetrics: availability here, parsing of its documented plist -------------------------


@pytest.mark.skipif(sys.platform == "darwin", reason="on a Mac powermetrics exists")
def test_powermetrics_off_macos_says_so():
    reason = PowermetricsPower().available()
    assert reason is not None and "macOS only" in reason
    with PowerMeter(PowermetricsPower()) as meter:
        pass
    assert meter.reading is None and "macOS only" in meter.unavailable_reason


def test_powermetrics_plist_energy():
    sample = {
        "elapsed_ns": 100_000_000,
        "processor": {"cpu_energy": 900, "gpu_energy": 600, "cpu_power": 9000.0},
    }
    assert _plist_energy(plistlib.dumps(sample) + b"\n") == pytest.approx((1.5, 0.1))
    assert _plist_energy(plistlib.dumps({"elapsed_ns": 1, "processor": {}})) is None
    assert _plist_energy(b"<?xml version=") is None


def test_power_unavailable_is_an_accelbench_error():
    from accelbench.errors import AccelbenchError

    assert issubclass(PowerUnavailable, AccelbenchError)
