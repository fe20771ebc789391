"""Power: the device's energy over a timed region, where the platform exposes it, or why not.

A `PowerSource` reads one platform's counter: NVML for NVIDIA GPUs, RAPL for Linux CPU packages,
`powermetrics` for Apple silicon. `PowerMeter` wraps the timed region with one source and keeps
either a `PowerReading` or the reason there is none; a figure is never guessed. Which source a
device uses is the device module's choice: nothing here looks at device names.

Reads happen at the two ends of the region and, where a counter could wrap or only a power figure
exists, on a daemon thread in between; nothing here synchronizes a device or touches the timed
loop.
"""

from __future__ import annotations

import contextlib
import os
import platform
import plistlib
import re
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from types import TracebackType
from typing import IO, Any, Protocol

from ..core.facts import Fact, fact, scalar, stored
from ..errors import AccelbenchError, MissingDependency, require

__all__ = [
    "NvmlPower",
    "PowerMeter",
    "PowerReading",
    "PowerSource",
    "PowerUnavailable",
    "PowermetricsPower",
    "RaplPower",
    "close_nvml",
    "open_nvml",
]

THREAD_NAME = "accelbench-power"
_JOIN_TIMEOUT = 5.0  # seconds; a sampler stuck in a driver call must not hang the benchmark


class PowerUnavailable(AccelbenchError):
    """A source cannot measure here; the message says why. PowerMeter turns it into a reason."""


@dataclass(frozen=True)
class PowerReading:
    """Energy over the meter's interval, which encloses the timed region.

    `seconds` is the meter's own interval, a little longer than the timed blocks (it includes the
    gaps between them), so derive joules per sample from `average_watts` times the timed seconds.
    """

    average_watts: float
    joules: float
    seconds: float
    samples: int  # readings taken: 2 for a counter read at both ends, more when sampled
    source: str  # what was read, e.g. "NVML energy counter of GPU 0 (board)"

    def to_dict(self) -> dict[str, float | int | str]:
        return {
            "average_watts": self.average_watts,
            "joules": self.joules,
            "seconds": self.seconds,
            "samples": self.samples,
            "source": self.source,
        }


class PowerSource(Protocol):
    """One platform's power or energy counter.

    start() and stop() raise PowerUnavailable, with the reason, when the counter cannot be read.
    """

    name: str

    def available(self) -> str | None:
        """None when usable here, else why not (with what to install or do, where that helps)."""
        ...

    def start(self) -> None: ...
    def stop(self) -> PowerReading: ...


class PowerMeter:
    """Measures one region: `with PowerMeter(source) as meter: ...`, then `meter.reading`.

    Enter it before the region's timer starts and leave it after the timer stops: the timer's
    synchronizing boundaries then fall inside the meter, so the energy of queued work is counted.
    A source that cannot measure leaves `reading` None and says why in `unavailable_reason`.
    """

    def __init__(self, source: PowerSource | None, reason: str = "") -> None:
        self._source = source
        self._reason = reason or "no power counter is known for this device"
        self._reading: PowerReading | None = None
        self._running = False

    def __enter__(self) -> PowerMeter:
        self._reading = None
        if self._source is not None:
            try:
                self._source.start()
                self._running = True
            except PowerUnavailable as err:
                self._reason = str(err)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        # Stop even when the body raised, so no sampler outlives the region; the error propagates.
        if self._source is None or not self._running:
            return
        self._running = False
        try:
            self._reading = self._source.stop()
        except PowerUnavailable as err:
            self._reason = str(err)

    @property
    def reading(self) -> PowerReading | None:
        return self._reading

    @property
    def unavailable_reason(self) -> str:
        """Empty when there is a reading."""
        return "" if self._reading is not None else f"power not measurable here: {self._reason}"


def _reading(joules: float, seconds: float, samples: int, source: str) -> PowerReading:
    if seconds <= 0:
        raise PowerUnavailable(f"{source}: the interval was too short to measure")
    return PowerReading(joules / seconds, joules, seconds, samples, source)


class _Poller:
    """Calls `step` now, every `interval` seconds on a daemon thread, and once more at stop().

    The first and last calls run on the caller's thread, so the readings enclose the region.
    """

    def __init__(self, step: Callable[[], None], interval: float) -> None:
        self._step = step
        self._interval = interval
        self._stopping = threading.Event()
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._step()
        self._stopping.clear()
        self._error = None
        self._thread = threading.Thread(target=self._run, name=THREAD_NAME, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            while not self._stopping.wait(self._interval):
                self._step()
        except Exception as err:  # the driver's own error types; stop() reports it
            self._error = err

    def stop(self) -> None:
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(_JOIN_TIMEOUT)
            if self._thread.is_alive():
                raise PowerUnavailable(f"the power sampler did not stop within {_JOIN_TIMEOUT} s")
        if self._error is not None:
            raise PowerUnavailable(f"power sampling failed: {self._error}")
        self._step()


def _trapezoid(points: list[tuple[float, float]]) -> float:
    """Joules from (seconds, watts) points."""
    return sum((w0 + w1) / 2 * (t1 - t0) for (t0, w0), (t1, w1) in pairwise(points))


# --- NVIDIA GPUs through NVML -----------------------------------------------------------------


class NvmlPower:
    """An NVIDIA GPU's energy through NVML (package nvidia-ml-py, imported when first used).

    Volta and later keep a total-energy counter (mJ), read at both ends: no sampling error and no
    thread. The driver advances it about every 100 ms (seen on an H200), so a region needs several
    seconds for a figure good to a few percent. Older GPUs report only power (mW), sampled every
    `interval` seconds on a daemon thread and integrated; on Ampere and later (not A100) that
    figure is a 1 s average, which smooths short regions.
    `index` is NVML's order, which is not CUDA's when CUDA_VISIBLE_DEVICES or CUDA_DEVICE_ORDER
    reorder GPUs; pass the GPU's `uuid` (torch's device properties have it) to be sure.
    """

    def __init__(self, index: int = 0, *, uuid: str | None = None, interval: float = 0.05) -> None:
        self.index = index
        self.uuid = uuid
        self.interval = interval
        self.name = f"NVML GPU {uuid or index}"
        self._nvml: Any = None
        self._handle: Any = None
        self._energy_mj = 0
        self._clock_start = 0.0
        self._points: list[tuple[float, float]] = []
        self._poller: _Poller | None = None

    def available(self) -> str | None:
        try:
            self._open()
            self._has_energy_counter()
        except PowerUnavailable as err:
            return str(err)
        finally:
            self._close()
        return None

    def start(self) -> None:
        try:
            self._open()
            if self._has_energy_counter():
                self._poller = None
                self._energy_mj = self._call("nvmlDeviceGetTotalEnergyConsumption")
                self._clock_start = time.perf_counter()
            else:
                self._points = []
                self._poller = _Poller(self._sample, self.interval)
                self._poller.start()
        except PowerUnavailable:
            self._close()
            raise

    def stop(self) -> PowerReading:
        try:
            if self._poller is not None:
                self._poller.stop()
                return self._integrated()
            energy = self._call("nvmlDeviceGetTotalEnergyConsumption")
            seconds = time.perf_counter() - self._clock_start
        finally:
            self._close()
        if energy < self._energy_mj:
            raise PowerUnavailable(f"{self.name}: NVML's energy counter went back (driver reload?)")
        source = f"NVML energy counter of GPU {self.uuid or self.index} (board)"
        return _reading((energy - self._energy_mj) / 1000, seconds, 2, source)

    def _integrated(self) -> PowerReading:
        seconds = self._points[-1][0] - self._points[0][0]
        source = (
            f"NVML power of GPU {self.uuid or self.index} (board), "
            f"sampled every {self.interval * 1000:g} ms"
        )
        return _reading(_trapezoid(self._points), seconds, len(self._points), source)

    def _sample(self) -> None:
        milliwatts = self._call("nvmlDeviceGetPowerUsage")
        self._points.append((time.perf_counter(), milliwatts / 1000))

    def _open(self) -> None:
        self._nvml, self._handle = open_nvml(self.index, self.uuid)

    def _close(self) -> None:
        close_nvml(self._nvml)
        self._nvml = self._handle = None

    def _has_energy_counter(self) -> bool:
        """Whether the energy counter works; else whether power does; else why neither."""
        with contextlib.suppress(PowerUnavailable):
            self._call("nvmlDeviceGetTotalEnergyConsumption")
            return True
        self._call("nvmlDeviceGetPowerUsage")
        return False

    def _call(self, function: str) -> int:
        try:
            return int(getattr(self._nvml, function)(self._handle))
        except self._nvml.NVMLError as err:
            raise PowerUnavailable(f"{self.name}: {function} failed: {err}") from None


def open_nvml(
    index: int, uuid: str | None, purpose: str = "GPU power through NVML"
) -> tuple[Any, Any]:
    """(pynvml, the GPU's handle), NVML started; PowerUnavailable saying why not (`purpose`
    names what needs nvidia-ml-py). Each open needs its close_nvml. The machine-state meter
    (devices/state) reads NVML this way too."""
    try:
        pynvml = require("pynvml", "power", purpose, "nvidia-ml-py")
    except MissingDependency as err:  # no power figure is not an error: the run goes on
        raise PowerUnavailable(str(err)) from None
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as err:
        raise PowerUnavailable(f"NVML did not start (no NVIDIA driver?): {err}") from None
    try:
        if uuid is None:
            return pynvml, pynvml.nvmlDeviceGetHandleByIndex(index)
        return pynvml, pynvml.nvmlDeviceGetHandleByUUID(_nvml_uuid(uuid))
    except pynvml.NVMLError as err:
        close_nvml(pynvml)
        raise PowerUnavailable(f"NVML has no GPU {uuid or index}: {err}") from None


def close_nvml(pynvml: Any) -> None:
    """Undo one open_nvml; nothing when `pynvml` is None."""
    if pynvml is not None:
        with contextlib.suppress(pynvml.NVMLError):
            pynvml.nvmlShutdown()  # NVML counts inits; each needs its shutdown


def _nvml_uuid(uuid: str) -> bytes:
    # torch prints a GPU's UUID bare; NVML names it "GPU-<uuid>" (or "MIG-<uuid>").
    full = uuid if uuid.startswith(("GPU-", "MIG-")) else f"GPU-{uuid}"
    return full.encode()  # bytes work with old nvidia-ml-py versions and new ones alike


# --- Linux CPU packages through RAPL ----------------------------------------------------------


def _read_text(path: Path) -> str:
    return path.read_text()


@dataclass(frozen=True)
class _Zone:
    path: Path
    max_uj: int  # the counter runs from 0 up to this, then wraps


class RaplPower:
    """Linux CPU package energy from powercap's RAPL counters (intel-rapl:N; AMD uses them too).

    Sums the package zones (not psys, which already includes them; not DRAM). The counters wrap
    every few minutes under load, so a daemon thread reads them every `poll` seconds and adds up
    the steps, each of which can have wrapped at most once.
    """

    def __init__(
        self,
        root: Path = Path("/sys/class/powercap"),
        *,
        poll: float = 1.0,
        reader: Callable[[Path], str] = _read_text,
    ) -> None:
        self.root = root
        self.poll = poll
        self.name = "RAPL"
        self._read = reader
        self._zones: list[_Zone] = []
        self._last: list[int] = []
        self._total_uj = 0
        self._reads = 0
        self._clock_start = 0.0
        self._poller: _Poller | None = None

    def available(self) -> str | None:
        try:
            self._counters(self._find_zones())
        except PowerUnavailable as err:
            return str(err)
        return None

    def start(self) -> None:
        self._zones = self._find_zones()
        self._last = []
        self._total_uj = self._reads = 0
        self._poller = _Poller(self._step, self.poll)
        self._clock_start = time.perf_counter()
        self._poller.start()

    def stop(self) -> PowerReading:
        assert self._poller is not None, "stop() without start()"
        self._poller.stop()
        seconds = time.perf_counter() - self._clock_start
        names = " + ".join(zone.path.name for zone in self._zones)
        source = f"RAPL package energy ({names})"
        return _reading(self._total_uj / 1e6, seconds, self._reads, source)

    def _step(self) -> None:
        now = self._counters(self._zones)
        if self._last:
            for zone, before, after in zip(self._zones, self._last, now, strict=True):
                self._total_uj += (
                    after - before if after >= before else after + zone.max_uj - before
                )
        self._last = now
        self._reads += 1

    def _find_zones(self) -> list[_Zone]:
        if not self.root.is_dir():
            raise PowerUnavailable(
                f"no RAPL counters: {self.root} does not exist (not Linux, or no powercap driver)"
            )
        zones = [
            _Zone(path, self._number(path / "max_energy_range_uj"))
            for path in sorted(self.root.iterdir(), key=lambda p: p.name)
            if re.fullmatch(r"intel-rapl:\d+", path.name)
            and self._text(path / "name").startswith("package")
        ]
        if not zones:
            raise PowerUnavailable(f"no RAPL package zones (intel-rapl:N) under {self.root}")
        return zones

    def _counters(self, zones: list[_Zone]) -> list[int]:
        return [self._number(zone.path / "energy_uj") for zone in zones]

    def _number(self, path: Path) -> int:
        text = self._text(path)
        try:
            return int(text)
        except ValueError:
            raise PowerUnavailable(f"RAPL counter {path} holds {text!r}, not a number") from None

    def _text(self, path: Path) -> str:
        try:
            return self._read(path).strip()
        except PermissionError:
            # Linux made energy_uj root-only in late 2020 (the Platypus side channel).
            raise PowerUnavailable(
                f"RAPL energy counters are not readable: {path} needs root"
            ) from None
        except OSError as err:
            why = err.strerror or type(err).__name__
            raise PowerUnavailable(
                f"RAPL energy counters are not readable: {path}: {why}"
            ) from None


# --- Apple silicon through powermetrics -------------------------------------------------------


class PowermetricsPower:
    """Apple-silicon CPU and GPU energy from macOS's `powermetrics`, which needs root.

    Written from powermetrics' help text and the plist fields other tools parse (`elapsed_ns`,
    and `cpu_energy` and `gpu_energy` in mJ under `processor`); accelbench's developers had no
    Mac, so this has not been executed by us. A sample cut short when the region ends is lost,
    so `seconds` covers whole samples only and `average_watts` is the figure to use.
    """

    def __init__(self, interval_ms: int = 100) -> None:
        self.interval_ms = interval_ms
        self.name = "powermetrics"
        self._process: subprocess.Popen[bytes] | None = None
        self._reader: threading.Thread | None = None
        self._samples: list[tuple[float, float]] = []  # (joules, seconds) per sample

    def available(self) -> str | None:
        if sys.platform != "darwin":
            return f"powermetrics is macOS only (this is {platform.system()})"
        if shutil.which("powermetrics") is None:
            return "powermetrics is not on PATH (it lives in /usr/bin on macOS)"
        if os.geteuid() != 0:
            return "powermetrics needs root (sudo)"
        return None

    def start(self) -> None:
        why = self.available()
        if why:
            raise PowerUnavailable(why)
        self._samples = []
        command = ["powermetrics", "--samplers", "cpu_power,gpu_power"]
        command += ["-i", str(self.interval_ms), "-f", "plist", "-b", "0"]
        self._process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        stdout = self._process.stdout
        assert stdout is not None
        self._reader = threading.Thread(
            target=self._drain, args=(stdout,), name=THREAD_NAME, daemon=True
        )
        self._reader.start()

    def stop(self) -> PowerReading:
        assert self._process is not None and self._reader is not None, "stop() without start()"
        self._process.terminate()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._process.wait(_JOIN_TIMEOUT)
        self._reader.join(_JOIN_TIMEOUT)
        if not self._samples:
            raise PowerUnavailable(
                f"powermetrics gave no complete sample (exit code {self._process.returncode}); "
                f"regions shorter than {self.interval_ms} ms cannot be measured"
            )
        joules = sum(j for j, _ in self._samples)
        seconds = sum(s for _, s in self._samples)
        source = f"powermetrics CPU+GPU energy, {self.interval_ms} ms samples"
        return _reading(joules, seconds, len(self._samples), source)

    def _drain(self, stdout: IO[bytes]) -> None:
        # powermetrics ends each plist with a NUL byte; the last, partial one is dropped.
        pending = b""
        for chunk in iter(lambda: os.read(stdout.fileno(), 65536), b""):
            *complete, pending = (pending + chunk).split(b"\0")
            self._samples += [s for doc in complete if (s := _plist_energy(doc)) is not None]


def _plist_energy(document: bytes) -> tuple[float, float] | None:
    """(joules, seconds) of one powermetrics plist sample; None when it lacks the fields."""
    try:
        sample = plistlib.loads(document.strip())
        processor = sample["processor"]
        millijoules = float(processor.get("cpu_energy", 0)) + float(processor.get("gpu_energy", 0))
        seconds = float(sample["elapsed_ns"]) / 1e9
    except Exception:  # malformed, or not Apple silicon's fields: skipped, never guessed
        return None
    if "cpu_energy" not in processor and "gpu_energy" not in processor:
        return None
    return millijoules / 1000, seconds


# --- the fact a result keeps of its energy (core/facts), with the figures beside it ---
POWER = "power"
JOULES_PER_SAMPLE = "joules_per_sample"
SAMPLES_PER_S_PER_WATT = "samples_per_s_per_watt"
POWER_WARNING = "power_warning"
POWER_UNAVAILABLE = "power_unavailable"


@fact(POWER)
@dataclass(frozen=True)
class Power(Fact):
    """Energy over the timed samples (`power` and the figures beside it)."""

    average_watts: float
    joules: float  # over the meter's whole interval
    seconds: float  # the meter's interval
    source: str  # which counter read it, e.g. NVML or RAPL
    # charged by timed seconds, not the meter's interval
    joules_per_sample: float = stored(JOULES_PER_SAMPLE, beside=True)
    samples_per_s_per_watt: float = stored(SAMPLES_PER_S_PER_WATT, beside=True)
    warning: str = stored(POWER_WARNING, beside=True, default="")  # why the figure is rough


POWER_MISSING = scalar(POWER_UNAVAILABLE, str, "")
for _key in (JOULES_PER_SAMPLE, SAMPLES_PER_S_PER_WATT):
    scalar(_key, float | None, None)  # beside `power`, checked where it is absent too
scalar(POWER_WARNING, str, "")
