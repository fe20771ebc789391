"""Where a step's time went, derived from profiler events (no torch here: tests inject events).

`engine/profile` turns torch.profiler's events into the neutral records below; `explain`
makes the Explanation: device busy time (the union of kernel intervals), kernels per step,
the top operators and kernels, time by category, and the synchronizations inside the step.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .explanation import (
    IDLE,
    Explanation,
    KernelTime,
    OperatorTime,
    SyncPoint,
    ordered,
)

__all__ = [
    "KernelEvent",
    "OpEvent",
    "Profile",
    "RuntimeEvent",
    "busy_seconds",
    "category",
    "explain",
]

TOP = 8  # operators and kernels listed

# Device-runtime calls that make the host wait for the device.
SYNC_CALLS = {
    "cudaStreamSynchronize": "a stream synchronize",
    "cudaDeviceSynchronize": "a device synchronize",
    "cudaEventSynchronize": "an event synchronize",
    "cudaMemcpy": "a blocking copy",
    "hipStreamSynchronize": "a stream synchronize",
    "hipDeviceSynchronize": "a device synchronize",
    "hipMemcpy": "a blocking copy",
}

# (category, words in an operator's or kernel's name), the first match wins: attention before
# matmul (its kernels are gemms), normalization before reductions (a norm reduces).
_RULES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("optimizer", ("optimizer.step", "_foreach_", "_fused_adam", "_fused_sgd", "_fused_adamw")),
    ("copy host to device", ("memcpy htod",)),
    ("copy device to host", ("memcpy dtoh",)),
    ("copy device to device", ("memcpy dtod", "memset", "memcpy ptop")),
    ("attention", ("attention", "flash", "fmha", "_efficient_attention", "sdpa")),
    (
        "normalization",
        (
            "batch_norm",
            "layer_norm",
            "group_norm",
            "instance_norm",
            "rms_norm",
            "batchnorm",
            "layernorm",
            "bn_fw",
            "bn_bw",
            "norm_backward",
        ),
    ),
    (
        "matmul and convolution",
        (
            "conv",
            "gemm",
            "matmul",
            "aten::mm",
            "aten::bmm",
            "addmm",
            "linear",
            "cutlass",
            "xmma",
            "triton_mm",
            "cudnn",
            "sm80_",
            "sm90_",
            "ampere_",
            "hopper_",
            "mkldnn",
            "onednn",
        ),
    ),
    (
        "reductions",
        (
            "reduce",
            "aten::sum",
            "aten::mean",
            "aten::max",
            "aten::min",
            "softmax",
            "nll_loss",
            "cross_entropy",
            "aten::norm",
            "argmax",
            "triton_red",
            "triton_per",
            "aten::amax",
            "logsumexp",
        ),
    ),
    (
        "elementwise and activations",
        (
            "elementwise",
            "aten::add",
            "aten::mul",
            "aten::sub",
            "aten::div",
            "relu",
            "gelu",
            "silu",
            "sigmoid",
            "tanh",
            "threshold",
            "dropout",
            "aten::copy_",
            "aten::fill_",
            "aten::zero_",
            "triton_poi",
            "pool",
            "aten::clamp",
            "aten::where",
            "aten::pow",
            "aten::exp",
            "aten::to",
        ),
    ),
)


def category(*names: str) -> str:
    """The category of work a kernel or operator does, from its names (outermost first: the
    first name that matches a rule decides)."""
    for name in names:
        lowered = name.lower()
        for found, words in _RULES:
            if any(word in lowered for word in words):
                return found
    return "other"


@dataclass(frozen=True)
class OpEvent:
    """One PyTorch operator (or annotation) run on the host."""

    name: str
    outer: str  # the outermost operator or annotation around it (its own name at top level)
    host_s: float  # its own host time, children excluded, runtime calls included
    kernels: tuple[tuple[str, float], ...] = ()  # kernels it launched: (name, seconds)


@dataclass(frozen=True)
class KernelEvent:
    """One kernel (or copy, or memset) on the device."""

    name: str
    start_s: float
    end_s: float


@dataclass(frozen=True)
class RuntimeEvent:
    """One call into the device runtime (cudaLaunchKernel, cudaStreamSynchronize...)."""

    name: str
    op: str  # the innermost operator that made it; "" for none (accelbench's own)


@dataclass(frozen=True)
class Profile:
    """What the profiler saw over `steps` steps; `kernels` is None when only the host was
    profiled (then `host_only` says why)."""

    activity: str
    steps: int
    wall_s: float  # the profiled steps' wall time, synchronized at both ends
    ops: tuple[OpEvent, ...]
    kernels: tuple[KernelEvent, ...] | None
    runtime: tuple[RuntimeEvent, ...] = ()
    host_only: str = ""


def busy_seconds(kernels: Iterable[KernelEvent]) -> float:
    """The time at least one kernel was running: the union of their intervals."""
    busy, end = 0.0, float("-inf")
    for k in sorted(kernels, key=lambda k: k.start_s):
        if k.start_s > end:
            busy += k.end_s - k.start_s
            end = k.end_s
        elif k.end_s > end:
            busy += k.end_s - end
            end = k.end_s
    return busy


def explain(
    profile: Profile,
    measured_step_s: float | None,
    syncs: Sequence[SyncPoint] = (),
    cpu_operators: Sequence[str] = (),
    notes: Sequence[str] = (),
) -> Explanation:
    """The Explanation of `profile`; `syncs` and `cpu_operators` come from the step's
    dispatch check (with the caller's line), the runtime's synchronizations are added here."""
    n = profile.steps
    step_s = measured_step_s or profile.wall_s / n
    kernels = profile.kernels
    busy = None if kernels is None else busy_seconds(kernels) / n
    kernel_s = None if kernels is None else sum(k.end_s - k.start_s for k in kernels) / n
    categories = (
        _host_categories(profile, step_s)
        if kernels is None
        else _device_categories(profile, kernels, step_s, busy or 0.0)
    )
    host_note = [f"host only: {profile.host_only}"] if kernels is None else []
    return Explanation(
        activity=profile.activity,
        steps=n,
        profiled_step_s=profile.wall_s / n,
        measured_step_s=measured_step_s,
        device_busy_s=busy,
        kernels_per_step=None if kernels is None else len(kernels) / n,
        kernel_s=kernel_s,
        categories=categories,
        top_operators=_top_operators(profile),
        top_kernels=() if kernels is None else _top_kernels(kernels, n),
        syncs=(*syncs, *_runtime_syncs(profile, syncs)),
        cpu_operators=tuple(cpu_operators),
        notes=(*host_note, *notes),
    )


def _device_categories(
    profile: Profile, kernels: Sequence[KernelEvent], step_s: float, busy: float
) -> tuple[tuple[str, float], ...]:
    """Kernel time by category, scaled so the device's share is its busy time (overlapping
    kernels count once), plus the idle rest of the step."""
    seconds: dict[str, float] = defaultdict(float)
    attributed: dict[str, float] = defaultdict(float)
    for op in profile.ops:
        for name, duration in op.kernels:
            seconds[category(op.outer, op.name, name)] += duration
            attributed[name] += duration
    launched: dict[str, float] = defaultdict(float)
    for k in kernels:
        launched[k.name] += k.end_s - k.start_s
    for name, total in launched.items():  # kernels no operator claims (a CUDA graph's replay)
        seconds[category(name)] += max(0.0, total - attributed[name])
    total = sum(seconds.values())
    device = min(busy, step_s)
    out = {name: s / total * device for name, s in seconds.items()} if total else {}
    out[IDLE] = step_s - device
    return ordered(out)


def _host_categories(profile: Profile, step_s: float) -> tuple[tuple[str, float], ...]:
    """Host time by category; the rest of the step (Python, the framework) is "other"."""
    seconds: dict[str, float] = defaultdict(float)
    for op in profile.ops:
        seconds[category(op.outer, op.name)] += op.host_s / profile.steps
    total = sum(seconds.values())
    if total > step_s:  # the profiler's own cost made the ops longer than the plain step
        seconds = defaultdict(float, {k: v * step_s / total for k, v in seconds.items()})
    seconds["other"] += max(0.0, step_s - sum(seconds.values()))
    return ordered(seconds)


def _top_operators(profile: Profile) -> tuple[OperatorTime, ...]:
    device: dict[str, float] = defaultdict(float)
    host: dict[str, float] = defaultdict(float)
    calls: Counter[str] = Counter()
    for op in profile.ops:
        device[op.name] += sum(duration for _, duration in op.kernels)
        host[op.name] += op.host_s
        calls[op.name] += 1
    n = profile.steps
    rows = [OperatorTime(name, device[name] / n, host[name] / n, calls[name] / n) for name in calls]
    rows.sort(key=lambda r: (r.device_s, r.host_s), reverse=True)
    return tuple(rows[:TOP])


def _top_kernels(kernels: Sequence[KernelEvent], steps: int) -> tuple[KernelTime, ...]:
    seconds: dict[str, float] = defaultdict(float)
    calls: Counter[str] = Counter()
    for k in kernels:
        seconds[k.name] += k.end_s - k.start_s
        calls[k.name] += 1
    rows = [KernelTime(name, seconds[name] / steps, calls[name] / steps) for name in calls]
    rows.sort(key=lambda r: r.device_s, reverse=True)
    return tuple(rows[:TOP])


def _runtime_syncs(profile: Profile, known: Sequence[SyncPoint]) -> tuple[SyncPoint, ...]:
    """The runtime's synchronizations made by an operator the dispatch check did not name."""
    named = {s.operator for s in known}
    counts: Counter[tuple[str, str]] = Counter()
    for call in profile.runtime:
        cause = SYNC_CALLS.get(call.name)
        if cause and call.op and call.op not in named:
            counts[(call.op, cause)] += 1
    return tuple(
        SyncPoint(op, f"{cause} ({name_of(op)})", count / profile.steps)
        for (op, cause), count in sorted(counts.items())
    )


def name_of(op: str) -> str:
    """A short description of what usually makes `op` wait for the device."""
    return {
        "aten::_local_scalar_dense": ".item() or a Python number from a tensor",
        "aten::item": ".item() or a Python number from a tensor",
        "aten::nonzero": "a data-dependent shape",
        "aten::masked_select": "a data-dependent shape",
        "aten::copy_": "a copy to the host",
        "aten::_to_copy": "a copy to the host",
    }.get(op, "called by this operator")
