"""Run one configuration in this process, turning failures into results."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace

import torch

from .build import block_function, build
from .devices import Device
from .env import fingerprint
from .measure import StopRule, measure
from .results import Result, RunSpec
from .steps import unsupported_reason
from .workloads import Workload

__all__ = ["make_spec", "one_line", "run_config", "run_one"]


def make_spec(workload: Workload, device: Device, **options: object) -> RunSpec:
    """A RunSpec with the workload's defaults; `options` override any RunSpec field."""
    fields: dict[str, object] = {
        "workload": workload.name,
        "device": device.name,
        "batch_size": workload.batch_size,
        "steps_per_block": workload.steps_per_block,
    }
    fields.update({k: v for k, v in options.items() if v is not None})
    return RunSpec(**fields)  # type: ignore[arg-type]


def run_config(
    spec: RunSpec,
    workload: Workload,
    device: Device,
    stop: StopRule,
    on_block: Callable[[int, float], None] | None = None,
) -> Result:
    """Measure one configuration. Unsupported, OOM or a crash come back as a failed Result."""
    base = Result(
        spec=spec,
        status="error",
        environment=fingerprint(device),
    )
    reason = unsupported_reason(spec, device, workload)
    if reason:
        return replace(base, status="unsupported", error=reason)
    try:
        with device.context():
            device.reset_peak_memory()  # before building, so weights and data count
            started = time.perf_counter()
            prep = build(spec, workload, device)
            device.synchronize()
            setup = time.perf_counter() - started
            measurement = measure(block_function(prep), device.timer, stop, on_block)
            memory = device.peak_memory()
    except torch.cuda.OutOfMemoryError as exc:
        return replace(base, status="oom", error=one_line(exc))
    except Exception as exc:  # a failure is data: the sweep goes on
        return replace(base, error=one_line(exc))
    return replace(
        base,
        status="ok",
        measurement=measurement,
        peak_memory=memory.bytes,
        peak_memory_meaning=memory.meaning,
        metrics={"setup_s": setup},
    )


def run_one(
    workload: Workload,
    device: Device,
    blocks: int | None = None,
    warmup: int = 1,
    on_block: Callable[[int, float], None] | None = None,
    **options: object,
) -> Result:
    """Measure `workload` on `device` in this process (the Python API's simplest entry).

    `blocks` fixes the number of timed blocks; None uses the workload's default or, failing
    that, the adaptive stop rule. `options` set RunSpec fields (mode, precision, batch_size...).
    """
    stop = StopRule(blocks=blocks or workload.default_blocks, warmup=warmup)
    return run_config(make_spec(workload, device, **options), workload, device, stop, on_block)


def one_line(exc: BaseException) -> str:
    """An exception as one line: its type and the first line of its message."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".rstrip(": ")
