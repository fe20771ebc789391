"""Devices: discovery, availability and why, synchronization, timers, memory figures.

This is the only module that knows one kind of device from another. Each kind (cpu, cuda, mps,
xpu) is a `_Backend` object; a `Device` carries its backend and forwards to it, so the rest of
accelbench calls `device.synchronize()` or `device.timer()` and never tests a device's name.

CUDA covers NVIDIA and AMD (ROCm builds of PyTorch present AMD GPUs as `cuda`). The MPS backend
is written from PyTorch's documented `torch.mps` API; no Mac was at hand, so it has not been
executed by us (the README says so too).
"""

from __future__ import annotations

import contextlib
import os
import platform
import resource
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import torch

from ..errors import DeviceError
from .power import NvmlPower, PowerMeter, PowermetricsPower, RaplPower

__all__ = [
    "Device",
    "DtypeSupport",
    "MemoryReading",
    "Timer",
    "HostTimer",
    "discover",
    "find_device",
    "pick_device",
    "resolve_devices",
    "PREFERENCE",
]

# Order in which pick_device() prefers an available device.
PREFERENCE = ("cuda", "mps", "xpu", "cpu")


@dataclass(frozen=True)
class DtypeSupport:
    """Which reduced precisions the device can run (fp32 is always there)."""

    fp16: bool
    bf16: bool
    tf32: bool

    def names(self) -> list[str]:
        return ["fp32"] + [name for name in ("tf32", "fp16", "bf16") if getattr(self, name)]


@dataclass(frozen=True)
class MemoryReading:
    """A memory figure and what it means, since backends measure different things."""

    bytes: int | None
    meaning: str
    tensors_only: bool = False  # counts tensor storage alone (an allocator's peak), not a process


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
    """The backend's own events, recorded on the device's queue (CUDA, XPU, MPS).

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
    backend: _Backend = field(default=None, compare=False, repr=False)  # type: ignore[assignment]

    @property
    def caveat(self) -> str:
        """What accelbench's developers could not verify on this kind of device, if anything."""
        return self.backend.caveat if self.backend else ""

    @property
    def torch_device(self) -> torch.device:
        return torch.device(self.name)

    def synchronize(self) -> None:
        self.backend.synchronize(self.index)

    def timer(self) -> Timer:
        return self.backend.timer(self.index)

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

    def runtime_facts(self) -> dict[str, str]:
        """Driver and runtime versions, for the environment fingerprint."""
        return self.backend.runtime_facts(self.index)

    @property
    def can_capture_graphs(self) -> bool:
        return self.backend.can_capture_graphs

    @property
    def is_host(self) -> bool:
        """Whether this is the host CPU itself, not an accelerator."""
        return self.backend.kind == "cpu"

    @property
    def dist_backend(self) -> str | None:
        """The torch.distributed backend for data parallelism here, or None if there is none."""
        return self.backend.dist_backend

    def for_rank(self, local_rank: int) -> Device:
        """The device a data-parallel process of this node uses: the next GPU for each rank;
        every rank shares the one CPU."""
        if not self.backend.indexed:
            return self
        return resolve_devices(f"{self.kind}:{self.index + local_rank}")[0]

    def ddp_device_ids(self) -> list[int] | None:
        """What DistributedDataParallel's device_ids wants: the GPU's index, None on a CPU."""
        return [self.index] if self.backend.indexed else None

    def capture_graph(self, step: Callable[[], None]) -> Callable[[], None]:
        """Capture `step` into a device graph and return a function that replays it."""
        return self.backend.capture_graph(self.index, step)

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


class _Backend:
    """One kind of device. Subclasses override what their kind does differently."""

    kind = ""
    indexed = True  # whether names carry an index (cuda:0); the CPU and MPS are one device
    caveat = ""

    def discover(self) -> list[Device]:
        raise NotImplementedError

    def synchronize(self, index: int) -> None:
        """Wait until all work queued on the device has finished."""

    def timer(self, index: int) -> Timer:
        return HostTimer(lambda: self.synchronize(index))

    def context(self, index: int) -> contextlib.AbstractContextManager[Any]:
        return contextlib.nullcontext()

    def reset_peak_memory(self, index: int) -> None:
        """Start a new peak; backends without a resettable peak do nothing."""

    def peak_memory(self, index: int) -> MemoryReading:
        return MemoryReading(None, "not measurable on this device")

    def runtime_facts(self, index: int) -> dict[str, str]:
        return {}

    can_capture_graphs = False
    dist_backend: str | None = None
    onnxruntime_providers: tuple[str, ...] = ()

    def power_meter(self, index: int) -> PowerMeter:
        return PowerMeter(None, f"accelbench knows no power counter for {self.kind} devices")

    def capture_graph(self, index: int, step: Callable[[], None]) -> Callable[[], None]:
        raise DeviceError(f"{self.kind} cannot capture graphs")

    def _unavailable(self, reason: str) -> Device:
        return Device(name=self.kind, kind=self.kind, available=False, reason=reason, backend=self)


class _Cpu(_Backend):
    """The host CPU. PyTorch's CPU ops return when done, so there is nothing to synchronize."""

    kind = "cpu"
    indexed = False
    dist_backend = "gloo"
    onnxruntime_providers = ("CPUExecutionProvider",)

    def discover(self) -> list[Device]:
        details = (
            ("threads", str(torch.get_num_threads())),
            ("vector ISA", torch.backends.cpu.get_cpu_capability()),
            ("native bf16", "yes" if _cpu_has_native_bf16() else "no (emulated, slow)"),
        )
        return [
            Device(
                name="cpu",
                kind="cpu",
                available=True,
                reason="",
                model=cpu_model(),
                total_memory=_physical_memory(),
                dtypes=DtypeSupport(fp16=True, bf16=True, tf32=False),
                details=details,
                backend=self,
            )
        ]

    def power_meter(self, index: int) -> PowerMeter:
        if sys.platform.startswith("linux"):
            return PowerMeter(RaplPower())
        if sys.platform == "darwin":
            return PowerMeter(PowermetricsPower())
        return PowerMeter(None, f"no CPU power counter is read on {platform.system()}")

    def reset_peak_memory(self, index: int) -> None:
        # Linux resets the process's peak RSS (VmHWM) when "5" is written here.
        with contextlib.suppress(OSError), open("/proc/self/clear_refs", "w") as f:
            f.write("5")

    def peak_memory(self, index: int) -> MemoryReading:
        hwm = _proc_status_bytes("VmHWM")
        if hwm is not None and _peak_rss_resettable():
            return MemoryReading(hwm, "peak RSS of the process during the run")
        # ru_maxrss is KiB on Linux, bytes on macOS, and cannot be reset.
        scale = 1 if sys.platform == "darwin" else 1024
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale
        return MemoryReading(peak, "peak RSS of the process since it started")


class _Cuda(_Backend):
    """NVIDIA GPUs, and AMD GPUs through a ROCm build of PyTorch."""

    kind = "cuda"

    @property
    def caveat(self) -> str:  # type: ignore[override]
        if torch.version.hip is None:
            return ""  # verified on an NVIDIA H200
        return "accelbench has been verified on NVIDIA GPUs; its developers had no AMD GPU"

    @property
    def onnxruntime_providers(self) -> tuple[str, ...]:  # type: ignore[override]
        if torch.version.hip is None:
            return ("CUDAExecutionProvider", "TensorrtExecutionProvider")
        return ("ROCMExecutionProvider", "MIGraphXExecutionProvider")

    def discover(self) -> list[Device]:
        if torch.version.cuda is None and torch.version.hip is None:
            return [self._unavailable("this PyTorch was built without CUDA or ROCm")]
        if not torch.cuda.is_available():
            build = f"CUDA {torch.version.cuda}" if torch.version.cuda else "ROCm"
            return [
                self._unavailable(f"PyTorch has {build} but sees no GPU (no driver or no device)")
            ]
        return [self._describe(i) for i in range(torch.cuda.device_count())]

    def _describe(self, index: int) -> Device:
        props = torch.cuda.get_device_properties(index)
        capability = (props.major, props.minor)
        # TF32 tensor cores arrived with Ampere (8.0); ROCm builds do not use TF32 here.
        tf32 = torch.version.hip is None and capability >= (8, 0)
        details = [("multiprocessors", str(props.multi_processor_count))]
        if torch.version.hip is None:
            details.insert(0, ("compute capability", f"{props.major}.{props.minor}"))
        return Device(
            name=f"cuda:{index}",
            kind="cuda",
            available=True,
            reason="",
            model=props.name,
            total_memory=props.total_memory,
            dtypes=DtypeSupport(fp16=True, bf16=_cuda_bf16(index), tf32=tf32),
            details=tuple(details),
            index=index,
            backend=self,
        )

    def synchronize(self, index: int) -> None:
        torch.cuda.synchronize(index)

    def timer(self, index: int) -> Timer:
        return EventTimer(
            lambda: torch.cuda.Event(enable_timing=True), lambda: self.synchronize(index)
        )

    def context(self, index: int) -> contextlib.AbstractContextManager[Any]:
        return torch.cuda.device(index)

    def reset_peak_memory(self, index: int) -> None:
        torch.cuda.reset_peak_memory_stats(index)

    def peak_memory(self, index: int) -> MemoryReading:
        return MemoryReading(
            torch.cuda.max_memory_allocated(index),
            "peak allocated by PyTorch's caching allocator",
            tensors_only=True,
        )

    can_capture_graphs = True
    dist_backend = "nccl"  # RCCL on ROCm builds, under the same name

    def power_meter(self, index: int) -> PowerMeter:
        if torch.version.hip is not None:
            return PowerMeter(None, "AMD GPU power is not read by accelbench yet")
        # NVML numbers GPUs its own way; the UUID names the same GPU in both.
        uuid = str(getattr(torch.cuda.get_device_properties(index), "uuid", "")) or None
        return PowerMeter(NvmlPower(index, uuid=uuid))

    def capture_graph(self, index: int, step: Callable[[], None]) -> Callable[[], None]:
        # PyTorch's whole-network recipe: warm up on a side stream (so lazily created state
        # such as optimizer buffers exists before capture), then capture one step.
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                step()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            step()
        return graph.replay

    def runtime_facts(self, index: int) -> dict[str, str]:
        facts = {}
        if torch.version.cuda:
            facts["cuda_runtime"] = torch.version.cuda
        if torch.version.hip:
            facts["hip"] = torch.version.hip
        if torch.backends.cudnn.is_available():
            facts["cudnn"] = str(torch.backends.cudnn.version())
        facts["driver"] = _nvidia_driver_version(index) or "unknown"
        return facts


class _Mps(_Backend):
    """Apple-silicon (and AMD-on-Intel-Mac) GPUs through Metal. Not executed here: no Mac."""

    kind = "mps"
    indexed = False
    onnxruntime_providers = ("CoreMLExecutionProvider",)  # Core ML picks GPU or Neural Engine
    caveat = (
        "accelbench's MPS code follows PyTorch's documented torch.mps API, but its developers "
        "had no Mac to run it on: treat these figures as unverified by us"
    )

    def discover(self) -> list[Device]:
        if sys.platform != "darwin":
            return [
                self._unavailable(f"MPS needs macOS 12.3 or later (this is {platform.system()})")
            ]
        if not torch.backends.mps.is_built():
            return [self._unavailable("this PyTorch was built without MPS")]
        if not torch.backends.mps.is_available():
            return [self._unavailable("MPS needs macOS 12.3 or later and a Metal GPU")]
        return [
            Device(
                name="mps",
                kind="mps",
                available=True,
                reason="",
                model=cpu_model(),  # the chip, e.g. "Apple M2 Max": its GPU is on it
                total_memory=torch.mps.recommended_max_memory(),
                # bf16 on MPS needs macOS 14 (Sonoma).
                dtypes=DtypeSupport(fp16=True, bf16=_macos_major() >= 14, tf32=False),
                details=(("memory", "unified with the CPU"),),
                backend=self,
            )
        ]

    def synchronize(self, index: int) -> None:
        torch.mps.synchronize()

    def timer(self, index: int) -> Timer:
        return EventTimer(lambda: torch.mps.event.Event(enable_timing=True), torch.mps.synchronize)

    def power_meter(self, index: int) -> PowerMeter:
        return PowerMeter(PowermetricsPower())  # CPU and GPU package power: unified memory SoC

    def peak_memory(self, index: int) -> MemoryReading:
        # MPS keeps no peak counter: report what the Metal driver holds at the end of the run.
        return MemoryReading(
            torch.mps.driver_allocated_memory(),
            f"driver-allocated at the end (MPS has no peak counter); "
            f"tensors: {torch.mps.current_allocated_memory()} B",
        )


class _Xpu(_Backend):
    """Intel GPUs."""

    kind = "xpu"
    dist_backend = "xccl"  # PyTorch's Intel GPU collectives (2.8 and later); not executed here
    onnxruntime_providers = ("OpenVINOExecutionProvider",)
    caveat = (
        "accelbench's XPU code follows PyTorch's documented torch.xpu API, but its developers "
        "had no Intel GPU to run it on: treat these figures as unverified by us"
    )

    def discover(self) -> list[Device]:
        xpu = getattr(torch, "xpu", None)
        if xpu is None or not xpu._is_compiled():
            return [self._unavailable("this PyTorch was built without XPU")]
        if not xpu.is_available():
            return [
                self._unavailable("PyTorch has XPU but sees no Intel GPU (no driver or device)")
            ]
        return [self._describe(i) for i in range(xpu.device_count())]

    def _describe(self, index: int) -> Device:
        props = torch.xpu.get_device_properties(index)
        return Device(
            name=f"xpu:{index}",
            kind="xpu",
            available=True,
            reason="",
            model=props.name,
            total_memory=props.total_memory,
            dtypes=DtypeSupport(fp16=True, bf16=torch.xpu.is_bf16_supported(), tf32=False),
            details=(("driver", str(getattr(props, "driver_version", "unknown"))),),
            index=index,
            backend=self,
        )

    def synchronize(self, index: int) -> None:
        torch.xpu.synchronize(index)

    def timer(self, index: int) -> Timer:
        return EventTimer(
            lambda: torch.xpu.Event(enable_timing=True), lambda: self.synchronize(index)
        )

    def context(self, index: int) -> contextlib.AbstractContextManager[Any]:
        return torch.xpu.device(index)

    def reset_peak_memory(self, index: int) -> None:
        torch.xpu.reset_peak_memory_stats(index)

    def peak_memory(self, index: int) -> MemoryReading:
        return MemoryReading(
            torch.xpu.max_memory_allocated(index), "peak allocated by PyTorch", tensors_only=True
        )


_BACKENDS: dict[str, _Backend] = {b.kind: b for b in (_Cuda(), _Mps(), _Xpu(), _Cpu())}


def discover() -> list[Device]:
    """Every backend's devices, available or not, in order of preference."""
    return [device for kind in PREFERENCE for device in _BACKENDS[kind].discover()]


def resolve_devices(spec: str) -> list[Device]:
    """Turn 'all' or a comma list such as 'cpu,cuda,cuda:1' into available devices.

    'cuda' and 'xpu' mean device 0. Raises DeviceError for an unknown or unavailable name.
    """
    known = discover()
    available = [d for d in known if d.available]
    names = [n.strip() for n in spec.split(",") if n.strip()]
    if not names:
        raise DeviceError(f"no device named; choose from: {_choices(available)}")
    if names == ["all"]:
        return available
    chosen: list[Device] = []
    for name in names:
        device = _find(name, known, available)
        if device not in chosen:
            chosen.append(device)
    return chosen


def pick_device(preferred: str | None = None) -> Device:
    """The best available device: `preferred`, else $ACCELBENCH_DEVICE, else cuda, mps, xpu, cpu."""
    wanted = preferred or os.environ.get("ACCELBENCH_DEVICE")
    if wanted:
        devices = resolve_devices(wanted)
        if len(devices) != 1:
            raise DeviceError(f"pick_device wants one device, got {wanted!r}")
        return devices[0]
    return next(d for d in discover() if d.available)  # cpu is always available


def find_device(name: str) -> Device:
    """The device called `name`, available or not (its `reason` says why not).

    For commands that report an unavailable device as a row rather than refuse the input:
    only an unknown name raises DeviceError.
    """
    return _lookup(name, discover())


def _lookup(name: str, known: list[Device]) -> Device:
    kind, _, index = name.partition(":")
    backend = _BACKENDS.get(kind)
    if backend is None or (index and not (index.isdigit() and backend.indexed)):
        raise DeviceError(
            f"unknown device {name!r}; valid: cpu, cuda, cuda:N, mps, xpu, xpu:N, all "
            f"(available here: {_choices([d for d in known if d.available])})"
        )
    full = f"{kind}:{index or 0}" if backend.indexed else kind
    for device in known:
        if device.name == full:
            return device
    reason = next((d.reason for d in known if d.kind == kind and not d.available), "")
    why = reason or f"{kind} has no device {index or 0}"
    return Device(name=full, kind=kind, available=False, reason=why, backend=backend)


def _find(name: str, known: list[Device], available: list[Device]) -> Device:
    device = _lookup(name, known)
    if device.available:
        return device
    raise DeviceError(
        f"device {name!r} is not available here: {device.reason}; available: {_choices(available)}"
    )


def _choices(available: list[Device]) -> str:
    return ", ".join(d.name for d in available) or "none"


# --- facts read from the host -----------------------------------------------------------------


def cpu_model() -> str:
    """The CPU's marketing name, from the OS."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError), open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    if sys.platform == "darwin":
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            out = subprocess.run(
                ["sysctl", "-n", "machdep.cpu.brand_string"],
                capture_output=True,
                text=True,
                timeout=5,
                check=True,
            )
            return out.stdout.strip()
    return platform.processor() or platform.machine()


def _cpu_flags() -> set[str]:
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    return set()


def _cpu_has_native_bf16() -> bool:
    if platform.machine() == "arm64" and sys.platform == "darwin":
        return True  # Apple M2 and later have bf16 instructions; M1 emulates (close enough here)
    return bool(_cpu_flags() & {"avx512_bf16", "amx_bf16", "bf16"})


def _physical_memory() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def _proc_status_bytes(key: str) -> int | None:
    with contextlib.suppress(OSError), open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024  # reported in kB
    return None


def _peak_rss_resettable() -> bool:
    return os.access("/proc/self/clear_refs", os.W_OK)


def _macos_major() -> int:
    version = platform.mac_ver()[0]
    return int(version.split(".")[0]) if version else 0


def _cuda_bf16(index: int) -> bool:
    with torch.cuda.device(index):
        return bool(torch.cuda.is_bf16_supported())


def _nvidia_driver_version(index: int) -> str | None:
    if torch.version.hip is not None or shutil.which("nvidia-smi") is None:
        return None
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader", f"-i={index}"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        )
        return out.stdout.strip() or None
    return None
