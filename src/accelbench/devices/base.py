"""The device interface: a `Device`, its timers and memory readings, and the per-kind backend.

Each kind of device (cpu, cuda, mps, xpu: one module each) is a `DeviceBackend` object; a
`Device` carries its backend and forwards to it, so the rest of accelbench calls
`device.synchronize()` or `device.timer()` and never tests a device's name.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import torch

from ..errors import DeviceError
from .power import PowerMeter
from .state import StateMeter

__all__ = [
    "Device",
    "DeviceBackend",
    "DeviceEvent",
    "DtypeSupport",
    "EventTimer",
    "HostTimer",
    "MemoryReading",
    "PeakSampler",
    "SyncedEvent",
    "Timer",
]


@dataclass(frozen=True)
class DtypeSupport:
    """Which reduced precisions the device can run (fp32 is always there)."""

    fp16: bool
    bf16: bool
    tf32: bool
    # Those it runs without arithmetic of its own (a CPU without fp16 or bf16 instructions):
    # correct, and many times slower than fp32.
    emulated: tuple[str, ...] = ()

    def names(self) -> list[str]:
        return ["fp32"] + [name for name in ("tf32", "fp16", "bf16") if getattr(self, name)]


@dataclass(frozen=True)
class MemoryReading:
    """A memory figure and what it means, since backends measure different things."""

    bytes: int | None
    meaning: str
    tensors_only: bool = False  # counts tensor storage alone (an allocator's peak), not a process


class PeakSampler(Protocol):
    """Samples a memory counter while entered (around the timed samples); for a device that
    keeps no peak counter of its own."""

    def __enter__(self) -> object: ...
    def __exit__(self, *exc: object) -> None: ...
    def reading(self) -> MemoryReading | None:
        """The largest value sampled and what it means, or None if nothing was sampled."""
        ...


class Timer(Protocol):
    """Times one region. start() and stop() are timing boundaries: both synchronize."""

    def start(self) -> None: ...
    def stop(self) -> None: ...
    def elapsed(self) -> float:
        """Seconds between start() and stop()."""
        ...


class HostTimer:
    """The host clock, read after synchronizing the device so queued work is counted."""

    def __init__(
        self, synchronize: Callable[[], None], clock: Callable[[], float] = time.perf_counter
    ) -> None:
        self._synchronize = synchronize
        self._clock = clock
        self._start = self._stop = 0.0

    def start(self) -> None:
        self._synchronize()
        self._start = self._clock()

    def stop(self) -> None:
        self._synchronize()
        self._stop = self._clock()

    def elapsed(self) -> float:
        return self._stop - self._start


class EventTimer:
    """The backend's own events, recorded on the device's queue (CUDA; see mps.py and xpu.py
    for why those kinds time with the host clock).

    start() synchronizes first so that no earlier work (warm-up) overlaps the region; stop()
    synchronizes after recording so that elapsed() can be read at once.
    """

    def __init__(self, new_event: Callable[[], Any], synchronize: Callable[[], None]) -> None:
        self._synchronize = synchronize
        self._begin = new_event()
        self._end = new_event()

    def start(self) -> None:
        self._synchronize()
        self._begin.record()

    def stop(self) -> None:
        self._end.record()
        self._synchronize()

    def elapsed(self) -> float:
        return float(self._begin.elapsed_time(self._end)) / 1000.0  # events report ms


class DeviceEvent(Protocol):
    """A point in the device's queue, recorded after some work: whether that work has finished,
    asked without waiting, and a wait for it."""

    def query(self) -> bool:
        """Whether the work before this point has finished; never waits on a device with events."""
        ...

    def synchronize(self) -> None:
        """Wait until the work before this point has finished."""
        ...


class SyncedEvent:
    """The event of a device that has none to ask: query() waits for the device (on the CPU,
    where the work was done when its call returned, that costs nothing)."""

    def __init__(self, synchronize: Callable[[], None]) -> None:
        self.synchronize = synchronize

    def query(self) -> bool:
        self.synchronize()
        return True


@dataclass(frozen=True)
class Device:
    """One device: its facts, and the operations accelbench needs from it."""

    name: str  # "cpu", "cuda:0", "mps", "xpu:0"; "cuda" alone when no CUDA device exists
    kind: str  # "cpu", "cuda", "mps" or "xpu"
    available: bool
    reason: str  # why it is not available; empty when it is
    model: str = ""  # what the hardware calls itself, e.g. "NVIDIA H200"
    total_memory: int | None = None
    dtypes: DtypeSupport = DtypeSupport(fp16=False, bf16=False, tf32=False)
    details: tuple[tuple[str, str], ...] = ()  # extra facts worth showing, e.g. capability
    index: int = 0
    backend: DeviceBackend = field(default=None, compare=False, repr=False)  # type: ignore[assignment]
    # The host's cores this process may run on (its CPU affinity), where the device is the
    # host; 0 elsewhere or where the OS does not say. The threads lever's search values come
    # from it, so tests give a device of their own instead of reading this machine's.
    cores: int = 0

    @property
    def caveat(self) -> str:
        """What accelbench's developers could not verify on this kind of device, if anything."""
        return self.backend.caveat if self.backend else ""

    @property
    def torch_device(self) -> torch.device:
        return torch.device(self.name)

    @property
    def autocast_type(self) -> str:
        """The device type torch.autocast and torch.amp.GradScaler take for this device."""
        return self.torch_device.type

    def synchronize(self) -> None:
        self.backend.synchronize(self.index)

    def timer(self) -> Timer:
        return self.backend.timer(self.index)

    def record_event(self) -> DeviceEvent:
        """An event recorded now on the device's current queue: the work queued so far can be
        asked whether it has finished while the host does something else."""
        return self.backend.record_event(self.index)

    def context(self) -> contextlib.AbstractContextManager[Any]:
        """Make this device current, so events and streams belong to it."""
        return self.backend.context(self.index)

    def reset_peak_memory(self) -> None:
        self.backend.reset_peak_memory(self.index)

    def peak_memory(self) -> MemoryReading:
        return self.backend.peak_memory(self.index)

    def power_meter(self) -> PowerMeter:
        """A meter for this device's power over a region, or one that says why there is none."""
        return self.backend.power_meter(self.index)

    def state_meter(self) -> StateMeter:
        """A meter for what else the machine did over a region: the host's load, and where the
        device can say, its clocks, temperature, throttling and other processes on it."""
        return self.backend.state_meter(self.index)

    def runtime_facts(self) -> dict[str, str]:
        """Driver and runtime versions, for the environment fingerprint."""
        return self.backend.runtime_facts(self.index)

    @property
    def can_capture_graphs(self) -> bool:
        return self.backend.can_capture_graphs

    @property
    def is_host(self) -> bool:
        """Whether this is the host CPU itself, not an accelerator."""
        return self.backend.is_host

    @property
    def dist_backend(self) -> str | None:
        """The torch.distributed backend for data parallelism here, or None if there is none."""
        return self.backend.dist_backend

    def for_rank(self, local_rank: int) -> Device:
        """The device a data-parallel process of this node uses: the next GPU for each rank;
        every rank shares the one CPU. Raises DeviceError when that GPU is not available."""
        if not self.backend.indexed:
            return self
        index = self.index + local_rank
        name = f"{self.kind}:{index}"
        found = [d for d in self.backend.discover() if d.name == name and d.available]
        if not found:
            raise DeviceError(
                f"device {name!r} is not available here: {self.kind} has no device {index}"
            )
        return found[0]

    def ddp_device_ids(self) -> list[int] | None:
        """What DistributedDataParallel's device_ids wants: the GPU's index, None on a CPU."""
        return [self.index] if self.backend.indexed else None

    def capture_graph(self, step: Callable[[], None]) -> Callable[[], None]:
        """Capture `step` into a device graph and return a function that replays it."""
        return self.backend.capture_graph(self.index, step)

    @property
    def profiler_activity(self) -> str:
        """The torch.profiler activity of this device's kernels ("CUDA"...), "" for none."""
        return self.backend.profiler_activity

    @property
    def host_only_reason(self) -> str:
        """Why only the host is profiled here (with no profiler activity)."""
        return self.backend.host_only_reason

    def cpu_fallback(self) -> str:
        """Why operators may silently run on the CPU instead of this device, or ""."""
        return self.backend.cpu_fallback()

    def peak_sampler(self) -> PeakSampler | None:
        """A sampler of this device's memory for the timed samples, where it has no peak."""
        return self.backend.peak_sampler(self.index)

    @property
    def swap_limit(self) -> int | None:
        """Bytes past which this device's memory spills to swap (slowly) rather than raising
        an out-of-memory error, or None where running out of memory raises."""
        return self.total_memory if self.backend.spills_to_swap else None

    @property
    def hosts_coreml(self) -> bool:
        """Whether Core ML models are benchmarked on this device (the Mac's GPU entry)."""
        return self.backend.hosts_coreml

    def compile_unsupported(self) -> str:
        """Why torch.compile cannot run on this device, or ""."""
        return self.backend.compile_unsupported()

    def dist_unsupported(self) -> str:
        """Why data parallelism (torch.distributed) cannot run on this device, or ""."""
        return self.backend.dist_unsupported()

    def dtype_unsupported(self, precision: str) -> str:
        """Why this device cannot run `precision`, saying the real cause, or ""."""
        return self.backend.dtype_unsupported(precision, self)

    @property
    def onnxruntime_providers(self) -> tuple[str, ...]:
        """The ONNX Runtime execution providers that run on this kind of device, best first."""
        return self.backend.onnxruntime_providers

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "available": self.available,
            "reason": self.reason,
            "model": self.model,
            "total_memory": self.total_memory,
            "dtypes": self.dtypes.names(),
            "details": dict(self.details),
            "caveat": self.caveat,
        }


class DeviceBackend:
    """One kind of device. Subclasses (one module per kind) override what their kind does
    differently; the defaults suit a device that has nothing to wait for and no counters."""

    kind = ""
    indexed = True  # whether names carry an index (cuda:0); the CPU and MPS are one device
    is_host = False  # whether this is the host CPU itself
    caveat = ""
    can_capture_graphs = False
    dist_backend: str | None = None
    onnxruntime_providers: tuple[str, ...] = ()
    # The torch.profiler.ProfilerActivity that records this kind's kernels ("CUDA", "XPU"), or
    # "" with `host_only_reason` saying why only the host can be profiled.
    profiler_activity = ""
    host_only_reason = "PyTorch's profiler records no kernels for this device"

    spills_to_swap = False  # memory past the limit goes to swap, not to an OOM (MPS)
    hosts_coreml = False  # Core ML's rows are filed under this device (MPS: the Mac's GPU)

    def cpu_fallback(self) -> str:
        """Why operators may silently run on the CPU instead of this device, or ""."""
        return ""

    def peak_sampler(self, index: int) -> PeakSampler | None:
        return None  # peak_memory() has a counter of its own

    def compile_unsupported(self) -> str:
        return ""

    def dist_unsupported(self) -> str:
        if self.dist_backend is None:
            return f"{self.kind} has no torch.distributed backend for data parallelism"
        return ""

    def dtype_unsupported(self, precision: str, device: Device) -> str:
        runs = device.dtypes.names()
        if precision in runs:
            return ""
        return f"{device.name} does not run {precision} (it runs {', '.join(runs)})"

    def discover(self) -> list[Device]:
        """This kind's devices, or one unavailable Device whose reason says why there are none."""
        raise NotImplementedError

    def synchronize(self, index: int) -> None:
        """Wait until all work queued on the device has finished."""

    def timer(self, index: int) -> Timer:
        return HostTimer(lambda: self.synchronize(index))

    def record_event(self, index: int) -> DeviceEvent:
        return SyncedEvent(lambda: self.synchronize(index))

    def context(self, index: int) -> contextlib.AbstractContextManager[Any]:
        return contextlib.nullcontext()

    def reset_peak_memory(self, index: int) -> None:
        """Start a new peak; backends without a resettable peak do nothing."""

    def peak_memory(self, index: int) -> MemoryReading:
        return MemoryReading(None, "not measurable on this device")

    def runtime_facts(self, index: int) -> dict[str, str]:
        return {}

    def power_meter(self, index: int) -> PowerMeter:
        return PowerMeter(None, f"accelbench knows no power counter for {self.kind} devices")

    def state_meter(self, index: int) -> StateMeter:
        reason = "" if self.is_host else f"accelbench reads no clocks or temperature of {self.kind}"
        return StateMeter(None, reason)

    def capture_graph(self, index: int, step: Callable[[], None]) -> Callable[[], None]:
        raise DeviceError(f"{self.kind} cannot capture graphs")

    def available_device(
        self,
        index: int = 0,
        *,
        model: str,
        total_memory: int | None,
        dtypes: DtypeSupport,
        details: tuple[tuple[str, str], ...],
        cores: int = 0,
    ) -> Device:
        """A Device of this kind that is here, named as its kind names devices."""
        return Device(
            name=f"{self.kind}:{index}" if self.indexed else self.kind,
            kind=self.kind,
            available=True,
            reason="",
            model=model,
            total_memory=total_memory,
            dtypes=dtypes,
            details=details,
            index=index,
            backend=self,
            cores=cores,
        )

    def unavailable(self, reason: str) -> Device:
        """The Device that stands for this kind when there is none of it here."""
        return Device(name=self.kind, kind=self.kind, available=False, reason=reason, backend=self)
