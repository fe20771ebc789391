"""The machine's state over the timed samples: what else used the CPU, the load, and on NVIDIA
GPUs the clocks, temperature, throttle reasons and other processes on the GPU.

`StateMeter` wraps the timed region the way `PowerMeter` does and leaves a `MachineState`
(core/facts). The host is read at the two ends: all CPUs' busy time from /proc/stat against
this process's own CPU time, so what is left is other processes'; where that is some, each
process's time from /proc names the busiest (devices/processes). A GPU source is read at both
ends and every `SAMPLE_INTERVAL_S` on a daemon thread, through NVML only: nothing here
synchronizes a device, calls CUDA or touches the timed loop. What cannot be read is said.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol

from ..core.facts import Fact, fact
from .power import PowerUnavailable, close_nvml, open_nvml
from .processes import MIN_CORES, ProcessTimes, busiest, clock_ticks_per_s

__all__ = [
    "SAMPLE_INTERVAL_S",
    "THROTTLE_REASONS",
    "GpuStateSource",
    "HostCounters",
    "HostReader",
    "NvmlState",
    "StateMeter",
    "host_load",
]

SAMPLE_INTERVAL_S = 0.2
THREAD_NAME = "accelbench-state"
_JOIN_TIMEOUT = 5.0  # seconds; a reading stuck in the driver must not hang the benchmark
# NVML's clock-event (throttle) reason bits, as nvml.h numbers them. GpuIdle (0x1) and
# ApplicationsClocksSetting (0x2) are left out: an idle GPU or clocks set on purpose is not
# throttling.
THROTTLE_REASONS = {
    0x4: "SW power cap",
    0x8: "HW slowdown",
    0x10: "sync boost",
    0x20: "SW thermal slowdown",
    0x40: "HW thermal slowdown",
    0x80: "HW power brake",
    0x100: "display clock setting",
}
_NVML_CLOCK_SM, _NVML_CLOCK_MEM, _NVML_TEMPERATURE_GPU = 1, 2, 0  # nvml.h's enum values


# --- the host ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class HostCounters:
    """The host's CPU counters at one moment, in seconds since boot (or since this started)."""

    at: float  # a monotonic clock
    own_s: float  # this process's CPU time and its finished children's
    busy_s: float | None = None  # all CPUs' busy time; None where /proc/stat is not readable
    steal_s: float | None = None  # time a hypervisor gave our virtual CPUs to other guests


def _proc_stat() -> str:
    return Path("/proc/stat").read_text()


def _own_cpu_s() -> float:
    try:
        import resource  # Unix: microseconds, where os.times counts 10 ms ticks
    except ImportError:
        t = os.times()
        return t.user + t.system + t.children_user + t.children_system
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


class HostReader:
    """Reads `HostCounters`, and each process's CPU time (`processes`, to name the busiest);
    the sources are arguments so tests can feed known counters. `ticks_per_s` is /proc/stat's
    unit (USER_HZ, 100 on Linux)."""

    def __init__(
        self,
        stat: Callable[[], str] = _proc_stat,
        own_cpu_s: Callable[[], float] = _own_cpu_s,
        clock: Callable[[], float] = time.monotonic,
        ticks_per_s: float | None = None,
        processes: Callable[[], ProcessTimes] = ProcessTimes.read,
    ) -> None:
        self._stat, self._own, self._clock = stat, own_cpu_s, clock
        self.processes = processes
        self.ticks_per_s = ticks_per_s or clock_ticks_per_s()
        self.unavailable = ""  # why there is no busy time, once a read failed

    def read(self) -> HostCounters:
        at, own = self._clock(), self._own()
        try:
            first = self._stat().splitlines()[0].split()
            user, nice, system, _idle, _iowait, irq, softirq, steal = map(int, first[1:9])
        except (OSError, IndexError, ValueError) as err:
            self.unavailable = (
                f"other processes' CPU use not recorded: /proc/stat not readable ({err})"
            )
            return HostCounters(at, own)
        # guest time is already inside user and nice; idle, iowait and steal are not busy here
        busy = (user + nice + system + irq + softirq) / self.ticks_per_s
        return HostCounters(at, own, busy, steal / self.ticks_per_s)


def host_load(
    before: HostCounters, after: HostCounters, cores: int | None, ticks_per_s: float = 100.0
) -> MachineState:
    """Other processes' CPU use between two readings, in cores on average.

    /proc/stat counts each CPU's time in ticks, so each end can be off by a tick per CPU (and
    one more for our own time): `cpu_resolution_cores` says how much that is over the interval.
    A negative remainder is that error, read as 0.
    """
    seconds = after.at - before.at
    state = MachineState(seconds=seconds, cores=cores)
    if before.busy_s is None or after.busy_s is None or seconds <= 0:
        return state
    other = (after.busy_s - before.busy_s) - (after.own_s - before.own_s)
    steal = (after.steal_s or 0.0) - (before.steal_s or 0.0)
    resolution = 2 * ((cores or 1) + 1) / ticks_per_s / seconds
    return replace(
        state,
        other_cpu_cores=max(0.0, other / seconds),
        steal_cores=max(0.0, steal / seconds),
        cpu_resolution_cores=resolution,
    )


def _load_average() -> tuple[float | None, str]:
    try:
        return os.getloadavg()[0], ""
    except (AttributeError, OSError):  # Windows has none
        return None, f"load average not recorded: {sys.platform} has none"


# --- the GPU ----------------------------------------------------------------------------------


class GpuStateSource(Protocol):
    """Reads one GPU's state: start() and sample() add a reading, stop() adds its figures to
    the host's `MachineState`. None of them raises: what cannot be read is said in the state."""

    def start(self) -> None: ...
    def sample(self) -> None: ...
    def stop(self, state: MachineState) -> MachineState: ...


@dataclass
class _GpuSeen:
    """What the NVML readings saw so far."""

    readings: int = 0
    sm: list[int] = field(default_factory=list)
    memory: list[int] = field(default_factory=list)
    temperature: list[int] = field(default_factory=list)
    reasons: set[str] = field(default_factory=set)
    others: int = 0
    other_pids: set[int] = field(default_factory=set)
    failed: dict[str, str] = field(default_factory=dict)  # quantity -> why it was not read


class NvmlState:
    """An NVIDIA GPU's clocks, temperature, throttle reasons and processes through NVML.

    Our own processes are this one and its children; NVML lists process ids of the host's PID
    namespace, so in a container where it does not list ours, ours is assumed among those listed.
    """

    def __init__(self, index: int = 0, *, uuid: str | None = None, nvml: Any = None) -> None:
        self.index, self.uuid = index, uuid
        self._given = nvml  # a stand-in for pynvml (tests)
        self._nvml: Any = None
        self._handle: Any = None
        self._seen = _GpuSeen()
        self._why = ""

    def start(self) -> None:
        self._seen, self._why = _GpuSeen(), ""
        try:
            if self._given is not None:
                self._nvml = self._given
                self._handle = self._given.nvmlDeviceGetHandleByIndex(self.index)
            else:
                purpose = "GPU clocks and temperature through NVML"
                self._nvml, self._handle = open_nvml(self.index, self.uuid, purpose)
        except PowerUnavailable as err:
            self._why = str(err)
            return
        self.sample()

    def sample(self) -> None:
        if self._nvml is None:
            return
        seen = self._seen
        seen.readings += 1
        self._read("SM clock", seen.sm, "nvmlDeviceGetClockInfo", _NVML_CLOCK_SM)
        self._read("memory clock", seen.memory, "nvmlDeviceGetClockInfo", _NVML_CLOCK_MEM)
        self._read(
            "temperature", seen.temperature, "nvmlDeviceGetTemperature", _NVML_TEMPERATURE_GPU
        )
        bits: list[int] = []
        self._read("throttle reasons", bits, _reasons_function(self._nvml))
        seen.reasons |= {name for bit, name in THROTTLE_REASONS.items() for b in bits if b & bit}
        processes: list[Any] = []
        self._read("processes", processes, "nvmlDeviceGetComputeRunningProcesses")
        self._count_others([int(p.pid) for p in (processes[0] if processes else ())])

    def stop(self, state: MachineState) -> MachineState:
        self.sample()
        if self._given is None:
            close_nvml(self._nvml)
        self._nvml = self._handle = None
        seen = self._seen
        why = self._why or "; ".join(f"{what}: {err}" for what, err in seen.failed.items())
        return replace(
            state,
            gpu_readings=seen.readings,
            sm_clock_min_mhz=min(seen.sm, default=None),
            sm_clock_max_mhz=max(seen.sm, default=None),
            memory_clock_min_mhz=min(seen.memory, default=None),
            memory_clock_max_mhz=max(seen.memory, default=None),
            temperature_max_c=max(seen.temperature, default=None),
            throttle_reasons=tuple(sorted(seen.reasons)),
            other_gpu_processes=seen.others,
            other_gpu_pids=tuple(sorted(seen.other_pids)),
            gpu_unavailable=f"GPU state not read: {why}" if why else "",
        )

    def _read(self, what: str, into: list[Any], function: str, *args: int) -> None:
        if what in self._seen.failed:  # said once; not asked again every 0.2 s
            return
        try:
            into.append(getattr(self._nvml, function)(self._handle, *args))
        except self._nvml.NVMLError as err:
            self._seen.failed[what] = f"{function} failed: {err}"

    def _count_others(self, pids: list[int]) -> None:
        ours = _our_pids()
        if ours & set(pids):
            others = [p for p in pids if p not in ours]
            self._seen.other_pids.update(others)
        else:  # another namespace's ids: ours is one of them, unnamed
            others = pids[1:]
        self._seen.others = max(self._seen.others, len(others))


def _reasons_function(nvml: Any) -> str:
    # NVML renamed "throttle reasons" to "clocks event reasons" in driver 535; both still work
    new = "nvmlDeviceGetCurrentClocksEventReasons"
    return new if hasattr(nvml, new) else "nvmlDeviceGetCurrentClocksThrottleReasons"


def _our_pids() -> set[int]:
    """This process and its children, where /proc lists them."""
    ours = {os.getpid()}
    with contextlib.suppress(OSError):
        for task in Path(f"/proc/{os.getpid()}/task").iterdir():
            ours.update(int(p) for p in (task / "children").read_text().split())
    return ours


# --- the meter --------------------------------------------------------------------------------


class StateMeter:
    """`with StateMeter(gpu) as meter: ...`, then `meter.state` (None before the region ends).

    `gpu` is the device's GPU source, None for the host CPU or a device whose state accelbench
    cannot read (`gpu_reason` says so).
    """

    def __init__(
        self,
        gpu: GpuStateSource | None = None,
        gpu_reason: str = "",
        host: HostReader | None = None,
        interval: float = SAMPLE_INTERVAL_S,
    ) -> None:
        self._gpu, self._gpu_reason = gpu, gpu_reason
        self._host = host or HostReader()
        self._interval = interval
        self._before: HostCounters | None = None
        self._processes: ProcessTimes | None = None
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self.state: MachineState | None = None

    def __enter__(self) -> StateMeter:
        self.state = None
        if self._gpu is not None:
            self._gpu.start()
            self._stopping.clear()
            self._thread = threading.Thread(target=self._sample, name=THREAD_NAME, daemon=True)
            self._thread.start()
        self._processes = self._host.processes()
        self._before = self._host.read()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        after = self._host.read()
        assert self._before is not None and self._processes is not None, (
            "__exit__ without __enter__"
        )
        state = host_load(self._before, after, os.cpu_count(), self._host.ticks_per_s)
        noise = (state.cpu_resolution_cores or 0.0) + MIN_CORES
        if (state.other_cpu_cores or 0.0) > noise:  # whose: read after the region
            named = busiest(self._processes, self._host.processes(), state.seconds, os.getpid())
            state = replace(state, other_cpu_busiest=named)
        load, no_load = _load_average()
        unavailable = "; ".join(why for why in (self._host.unavailable, no_load) if why)
        state = replace(state, load_average_1m=load, host_unavailable=unavailable)
        self.state = self._stop_gpu(replace(state, gpu_unavailable=self._gpu_reason))

    def _sample(self) -> None:
        assert self._gpu is not None
        while not self._stopping.wait(self._interval):
            self._gpu.sample()

    def _stop_gpu(self, state: MachineState) -> MachineState:
        if self._gpu is None or self._thread is None:
            return state
        self._stopping.set()
        self._thread.join(_JOIN_TIMEOUT)
        if self._thread.is_alive():  # its readings may still change: keep none of them
            return replace(
                state, gpu_unavailable=f"the GPU sampler did not stop in {_JOIN_TIMEOUT} s"
            )
        return self._gpu.stop(state)

    def to_metrics(self) -> dict[str, Any]:
        """The `machine_state` record, or nothing when the region never ended."""
        return {} if self.state is None else self.state.to_metrics()


# --- the fact a result keeps of the machine while it was timed (core/facts) ---
MACHINE_STATE = "machine_state"
# The same, over the verdict's probe (engine/probe): what else ran while the two batches were
# timed in alternation decides whether their ratio can carry a verdict.
PROBE_MACHINE_STATE = "probe_machine_state"


@fact(MACHINE_STATE, also=(PROBE_MACHINE_STATE,))
@dataclass(frozen=True)
class MachineState(Fact):
    """What else the machine was doing while the timed samples ran (`machine_state`).

    CPU figures are cores on average over `seconds` (1.0: one core busy the whole time); the GPU
    figures are the least and most seen in NVML readings at both ends and every 0.2 s between.
    None, or an empty tuple, where not read; the `*_unavailable` texts say why.
    """

    seconds: float  # the interval the host was read over
    cores: int | None = None  # the host's logical CPUs
    other_cpu_cores: float | None = None  # CPU time of processes other than ours (and children)
    steal_cores: float | None = None  # time the hypervisor ran other guests on our CPUs
    # how far the two CPU figures can be off from the counters' ticks alone (10 ms each)
    cpu_resolution_cores: float | None = None
    load_average_1m: float | None = None  # at the end
    host_unavailable: str = ""  # what of the host could not be read, and why
    gpu_readings: int = 0  # NVML readings taken
    sm_clock_min_mhz: int | None = None
    sm_clock_max_mhz: int | None = None
    memory_clock_min_mhz: int | None = None
    memory_clock_max_mhz: int | None = None
    temperature_max_c: int | None = None
    throttle_reasons: tuple[str, ...] = ()  # every reason seen, idle and app-clock bits left out
    other_gpu_processes: int = 0  # the most processes other than ours seen on the GPU at once
    other_gpu_pids: tuple[int, ...] = ()  # their ids, where NVML's ids are this PID namespace's
    gpu_unavailable: str = ""  # what of the GPU could not be read, and why
    # the busiest other processes on the CPU, e.g. "pid 812 python3: 0.98 cores", marked
    # "ours" (a live child, which getrusage does not count until it ends) or "our ancestor"
    # with the command where it runs our interpreter (devices/processes)
    other_cpu_busiest: tuple[str, ...] = ()
