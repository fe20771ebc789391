"""The explanation of one configuration's step: where its time went, from the profiler.

A typed record stored in `Result.metrics["explain"]` (so it is exported and imported with the
result). Times are seconds per step, averaged over the profiled steps, which run after the
measured samples: no reported figure comes from a profiled step. `engine/profile` records it,
`analysis/explain` derives it from the profiler's events, the renderers show it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ..core.facts import Fact, fact

__all__ = [
    "CATEGORIES",
    "IDLE",
    "Explanation",
    "KernelTime",
    "OperatorTime",
    "ProfileRequest",
    "SyncPoint",
    "ordered",
]

EXPLAIN = "explain"  # the key it is stored under

# The categories of device (or, host only, host) time, in the order they are shown. IDLE is
# the step's time with no kernel running: the device waited on the host.
IDLE = "idle (waiting on the host)"
CATEGORIES = (
    "matmul and convolution",
    "attention",
    "elementwise and activations",
    "normalization",
    "reductions",
    "copy host to device",
    "copy device to host",
    "copy device to device",
    "optimizer",
    "other",
    IDLE,
)


@dataclass(frozen=True)
class ProfileRequest:
    """Profile a configuration after its samples; write the Chrome trace to `trace` if set."""

    trace: str = ""
    steps: int | None = None  # None: enough steps for about 0.3 s (engine/profile)


@dataclass(frozen=True)
class OperatorTime:
    """A PyTorch operator's time per step: kernels it launched (device) and its own host time."""

    name: str
    device_s: float
    host_s: float
    calls: float  # per step


@dataclass(frozen=True)
class KernelTime:
    """A device kernel's time per step."""

    name: str
    device_s: float
    calls: float  # per step


@dataclass(frozen=True)
class SyncPoint:
    """A point inside the step where the host waits for the device (or would, on an
    accelerator): `.item()`, `print(tensor)`, a data-dependent shape, a copy to the host."""

    operator: str  # the operator that caused it, e.g. aten::_local_scalar_dense
    cause: str  # what it is, in words
    per_step: float  # how many times a step
    where: str = ""  # the caller's file:line in the user's code, where known


@fact(EXPLAIN)
@dataclass(frozen=True)
class Explanation(Fact):
    """Where one step's time went. `activity` is the profiled device activity ("cuda", "xpu")
    or "host" when PyTorch's profiler records no kernels for the device (then the device
    figures are None and `notes` says why)."""

    activity: str
    steps: int  # profiled steps (in each pass: the device alone, then with the host)
    profiled_step_s: float  # wall time per profiled step, synchronized (the lightest pass)
    measured_step_s: float | None  # the benchmark's median step: the shares' denominator
    device_busy_s: float | None  # union of kernel intervals per step
    kernels_per_step: float | None
    kernel_s: float | None  # kernel time per step, summed (overlapping kernels count twice)
    # (category, seconds per step), summing to step_s
    categories: tuple[tuple[str, float], ...] = ()
    top_operators: tuple[OperatorTime, ...] = ()
    top_kernels: tuple[KernelTime, ...] = ()
    syncs: tuple[SyncPoint, ...] = ()
    # operators that ran on the CPU while the device was not it
    cpu_operators: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()  # what was not profiled, and why
    trace: str = ""  # the Chrome/Perfetto trace written, if any

    @property
    def step_s(self) -> float:
        """The step the shares are of: the unprofiled median where known (the profiler slows
        the host), else the profiled step."""
        return self.measured_step_s or self.profiled_step_s

    @property
    def busy_share(self) -> float | None:
        """The share of the step the device was running kernels, at most 1."""
        if self.device_busy_s is None or self.step_s <= 0:
            return None
        return min(1.0, self.device_busy_s / self.step_s)

    @property
    def mean_kernel_s(self) -> float | None:
        if not self.kernels_per_step or self.kernel_s is None:
            return None
        return self.kernel_s / self.kernels_per_step

    def shares(self) -> list[tuple[str, float]]:
        """Each category's share of the categories' total (which is the step), adding to 1."""
        total = sum(seconds for _, seconds in self.categories)
        return [(name, seconds / total) for name, seconds in self.categories] if total else []


def ordered(categories: Mapping[str, float]) -> tuple[tuple[str, float], ...]:
    """Categories in CATEGORIES' order, the empty ones left out."""
    return tuple((name, categories[name]) for name in CATEGORIES if categories.get(name, 0) > 0)
