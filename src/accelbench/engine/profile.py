"""Profile a few steps after the measured samples, for the explanation of where time goes.

Nothing here runs inside the timed samples: `explain_steps` is called on the prepared, warm
configuration once its measurement is taken. Two passes: torch.profiler over a few steps (the
device's kernel activity where PyTorch has one, else the host only), then one step under a
dispatch mode that names each operator that makes the host wait for the device, or that ran on
the CPU while the configuration's device is another, with the line of code that called it.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import sys
import tempfile
import time
import traceback
import warnings
from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from ..analysis.explain import KernelEvent, OpEvent, Profile, RuntimeEvent, explain
from ..analysis.explanation import EXPLAIN, ProfileRequest, SyncPoint
from ..backends import Runnable, not_profiled
from ..core.modes import mode_of
from ..devices import Device
from ..errors import one_line
from ..levers import find_lever
from .facts import EXPLAIN_ERROR

__all__ = ["explain_steps", "fallback_warnings"]

PROFILE_SECONDS = 0.3  # profile about this long: enough steps to average, few events to parse
MIN_STEPS, MAX_STEPS = 3, 20

# Operators after which the host holds a value that only the device could compute, so it
# waited for the device to finish everything queued before.
SYNC_OPERATORS = {
    "aten::_local_scalar_dense": ".item(), print(tensor) or a Python number from a tensor",
    "aten::is_nonzero": "a Python bool from a tensor (if tensor: ...)",
    "aten::equal": "torch.equal: a Python bool from two tensors",
    "aten::nonzero": "a data-dependent shape (nonzero, boolean-mask indexing)",
    "aten::masked_select": "a data-dependent shape (masked_select)",
    "aten::_unique2": "a data-dependent shape (unique)",
    "aten::unique_dim": "a data-dependent shape (unique)",
    "aten::unique_consecutive": "a data-dependent shape (unique_consecutive)",
}
COPIES = {"aten::_to_copy", "aten::copy_"}
_FALLBACK = re.compile(r".*operator '([^']+)' is not currently supported on the MPS backend")
_TORCH_DIR = str(Path(torch.__file__).parent)
_PACKAGE_DIR = Path(__file__).resolve().parents[1]


def explain_steps(
    prep: Runnable,
    device: Device,
    measured_step_s: float | None,
    request: ProfileRequest,
    fallbacks: list[str],
) -> dict[str, Any]:
    """The explanation's metrics (or the reason there is none); the measurement stands."""
    reason = not_profiled(prep.spec)
    if reason:
        return {EXPLAIN_ERROR: reason}
    try:
        steps = request.steps or _steps(measured_step_s)
        profile = _profile(prep, device, steps, request.trace)
        syncs, cpu_ops, notes = _dispatch_check(prep, device)
        fallen = [f"{name} (CPU fallback)" for name in dict.fromkeys(fallbacks)]
        said = mode_of(prep.spec).profile_note(prep.spec)
        notes = [*notes, said] if said else notes
        found = explain(profile, measured_step_s, syncs, [*cpu_ops, *fallen], notes)
    except Exception as exc:  # the measurement stands; say why there is no explanation
        return {EXPLAIN_ERROR: f"profiling failed: {one_line(exc)}"}
    if request.trace:
        found = replace(found, trace=request.trace)
    return {EXPLAIN: found.to_record()}


def _steps(measured_step_s: float | None) -> int:
    if not measured_step_s:
        return MIN_STEPS
    return max(MIN_STEPS, min(MAX_STEPS, math.ceil(PROFILE_SECONDS / measured_step_s)))


def _profile(prep: Runnable, device: Device, steps: int, trace: str) -> Profile:
    """Where PyTorch records the device's kernels, two passes of `steps` steps: the device's
    activity alone (the host hardly slowed: the wall time and the kernels), then with the
    host's operators (which kernels each launched, the runtime's calls). Else the host once."""
    activity = device.profiler_activity
    host = torch.profiler.ProfilerActivity.CPU
    if not activity:
        events, wall = _record(prep, device, steps, [host], trace)
        return _convert(events, None, "host", steps, wall, device)
    on_device = getattr(torch.profiler.ProfilerActivity, activity)
    alone, wall = _record(prep, device, steps, [on_device], "")
    events, _ = _record(prep, device, steps, [host, on_device], trace)
    return _convert(events, alone, activity.lower(), steps, wall, device)


def _record(
    prep: Runnable, device: Device, steps: int, activities: list[Any], trace: str
) -> tuple[Any, float]:
    """torch.profiler's events over `steps` steps, after one profiled warm-up step for the
    profiler's own start; and the steps' wall time, synchronized at both ends."""
    schedule = torch.profiler.schedule(wait=0, warmup=1, active=steps, repeat=1)
    with warnings.catch_warnings():
        # one cycle is all we record: the warning about cycles is not for us
        warnings.filterwarnings("ignore", message=".*Profiler clears events")
        return _run_profiled(prep, device, steps, activities, schedule, trace)


def _run_profiled(
    prep: Runnable, device: Device, steps: int, activities: list[Any], schedule: Any, trace: str
) -> tuple[Any, float]:
    with (
        _without_kineto_log(),
        torch.profiler.profile(activities=activities, schedule=schedule) as prof,
    ):
        prep.step()
        prof.step()
        device.synchronize()
        started = time.perf_counter()
        for i in range(steps):
            prep.step()
            if i < steps - 1:
                prof.step()
        device.synchronize()
        wall = time.perf_counter() - started
        prof.step()
    if trace:
        prof.export_chrome_trace(trace)
    return prof.events(), wall


# Kineto's own log lines ("USDT:2026-12-01 16:05:27 5118:5118 SyncActivityProfilerHandler.cpp:39]
# profiler_start", a failed GPU count on a CPU-only machine), which no setting silences.
_KINETO_LINE = re.compile(rb"^[A-Z]+:\d{4}-\d\d-\d\d [\d:]+ \d+:\d+ \w+\.cpp:\d+\]")


@contextlib.contextmanager
def _without_kineto_log() -> Iterator[None]:
    """Hold back the process's stderr (file descriptor 2, where Kineto writes from C++) while
    profiling, then pass on every line that is not Kineto's own."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as held:
        os.dup2(held.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            held.seek(0)
            kept = [line for line in held if not _KINETO_LINE.match(line)]
            if kept:
                os.write(2, b"".join(kept))


def _convert(
    events: Any, alone: Any, activity: str, steps: int, wall: float, device: Device
) -> Profile:
    """torch's FunctionEvents as the neutral records analysis/explain reads (seconds); the
    kernels come from the pass of the device's activity alone, where there was one."""
    cpu = torch.profiler.DeviceType.CPU
    ops, runtime = [], []
    for e in events:
        if e.device_type != cpu:
            continue
        if _is_runtime(e.name):
            runtime.append(RuntimeEvent(e.name, _name(e.cpu_parent)))
        elif not e.is_async and not _is_step_mark(e.name):
            ops.append(OpEvent(e.name, _outer(e), _host_s(e), _kernels(e)))
    kernels = None
    if alone is not None:
        kernels = tuple(
            KernelEvent(e.name, e.time_range.start / 1e6, e.time_range.end / 1e6)
            for e in alone
            if e.device_type != cpu and not _is_annotation(e)
        )
    return Profile(
        activity=activity,
        steps=steps,
        wall_s=wall,
        ops=tuple(ops),
        kernels=kernels,
        runtime=tuple(runtime),
        host_only=device.host_only_reason if kernels is None else "",
    )


def _is_annotation(event: Any) -> bool:
    """A record_function range drawn on the device's timeline (ProfilerStep#3,
    Optimizer.step#SGD.step): a span around kernels, not a kernel."""
    return (
        bool(getattr(event, "is_user_annotation", False))
        or "#" in event.name
        or (_is_step_mark(event.name))
    )


def _is_runtime(name: str) -> bool:
    return name.startswith(("cuda", "hip")) and not name.startswith("cudnn")


def _is_step_mark(name: str) -> bool:
    return name.startswith("ProfilerStep")  # "ProfilerStep#3", or "ProfilerStep*" once merged


def _name(event: Any) -> str:
    return "" if event is None or _is_step_mark(event.name) else str(event.name)


def _outer(event: Any) -> str:
    outer = event
    while event.cpu_parent is not None and not _is_step_mark(event.cpu_parent.name):
        event = event.cpu_parent
        outer = event
    return str(outer.name)


def _host_s(event: Any) -> float:
    runtime = sum(c.cpu_time_total for c in event.cpu_children if _is_runtime(c.name))
    return float(event.self_cpu_time_total + runtime) / 1e6


def _kernels(event: Any) -> tuple[tuple[str, float], ...]:
    return tuple((str(k.name), float(k.duration) / 1e6) for k in event.kernels)


def _dispatch_check(prep: Runnable, device: Device) -> tuple[list[SyncPoint], list[str], list[str]]:
    """One step under a dispatch mode: synchronizing operators with their caller, and the
    operators that computed on the CPU while the device is another."""
    spec = prep.spec
    if find_lever("compile").active(spec) or find_lever("cuda_graphs").active(spec):
        return [], [], [_SKIPPED]
    watch = _Watch(device.torch_device.type)
    with watch:
        prep.step()
    device.synchronize()
    syncs = [
        SyncPoint(op, SYNC_OPERATORS.get(op, "a copy to the host"), float(count), where)
        for (op, where), count in watch.syncs.items()
    ]
    cpu_ops = [f"{op} x{count} ({where})" for (op, where), count in watch.on_cpu.items()]
    return syncs, cpu_ops, []


_SKIPPED = (
    "synchronization check skipped: a compiled or graph-captured step does not dispatch its "
    "operators one by one; the profiler's runtime calls still show its synchronizations"
)


class _Watch(TorchDispatchMode):
    """Records, during one step, the operators that make the host wait and those whose
    tensors were all on the CPU while the configuration's device is `device_type`."""

    def __init__(self, device_type: str) -> None:
        # torch leaves this __init__ unannotated, and mypy's untyped_calls_exclude does not
        # reach a call through super()
        super().__init__()  # type: ignore[no-untyped-call]
        self.device_type = device_type
        self.syncs: Counter[tuple[str, str]] = Counter()
        self.on_cpu: Counter[tuple[str, str]] = Counter()

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        name = func.name().split(".")[0]
        tensors = _tensors(args, kwargs, out)
        if name in SYNC_OPERATORS or (name in COPIES and _to_host(tensors, self.device_type)):
            self.syncs[(name, _caller())] += 1
        elif self.device_type != "cpu" and _all_on_cpu(tensors):
            self.on_cpu[(name, _caller())] += 1
        return out


def _tensors(args: Any, kwargs: Any, out: Any) -> list[torch.Tensor]:
    flat = torch.utils._pytree.tree_leaves((args, kwargs or {}, out))
    return [t for t in flat if isinstance(t, torch.Tensor)]


def _to_host(tensors: list[torch.Tensor], device_type: str) -> bool:
    """A copy between the device and the host, towards the host (the output comes last)."""
    if device_type == "cpu" or len(tensors) < 2:
        return False
    return tensors[-1].device.type == "cpu" and any(t.device.type != "cpu" for t in tensors)


def _all_on_cpu(tensors: list[torch.Tensor]) -> bool:
    """Real work on the host: every tensor on the CPU, one of them more than a scalar."""
    return (
        bool(tensors)
        and all(t.device.type == "cpu" for t in tensors)
        and any(t.numel() > 1 for t in tensors)
    )


def _caller() -> str:
    """The innermost frame outside torch and this module: the user's (or accelbench's) line."""
    for frame in reversed(traceback.extract_stack()[:-2]):
        path = frame.filename
        if path.startswith(_TORCH_DIR) or path == __file__ or "/contextlib.py" in path:
            continue
        return f"{_short(path)}:{frame.lineno} in {frame.name}"
    return ""


def _short(path: str) -> str:
    resolved = Path(path).resolve()
    for base, prefix in ((_PACKAGE_DIR, "accelbench/"), (Path.cwd(), "")):
        if resolved.is_relative_to(base):
            return prefix + str(resolved.relative_to(base))
    return path


@contextlib.contextmanager
def fallback_warnings(active: bool) -> Iterator[list[str]]:
    """Collect the operators PyTorch says fall back to the CPU (MPS warns once per process,
    usually during the warm-up, so this watches the whole build and measurement). Only the
    fallback's own warning changes filter; the others are shown as they would have been."""
    found: list[str] = []
    if not active:
        yield found
        return
    with warnings.catch_warnings(record=True) as caught:
        warnings.filterwarnings("always", message=_FALLBACK.pattern)
        yield found
    for w in caught:
        fallback = _FALLBACK.search(str(w.message))
        if fallback:
            found.append(fallback.group(1))
        else:  # not ours to swallow
            warnings.showwarning(w.message, w.category, w.filename, w.lineno)
