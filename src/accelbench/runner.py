"""Run a workload on devices, one configuration at a time, turning failures into results."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace
from datetime import datetime, timezone

import torch

from .devices import Device
from .env import fingerprint
from .measure import measure
from .results import Result, RunSpec
from .workloads import Workload

__all__ = ["run_one", "run_sweep"]

OnBlock = Callable[[Device, int, float], None]


def run_one(
    workload: Workload,
    device: Device,
    blocks: int,
    warmup: int = 1,
    on_block: OnBlock | None = None,
) -> Result:
    """Measure `workload` training on `device`. An OOM or a crash becomes a failed Result."""
    spec = RunSpec(
        workload=workload.name,
        device=device.name,
        batch_size=workload.batch_size,
        steps_per_block=workload.steps_per_block,
    )
    base = Result(
        spec=spec,
        status="error",
        environment=fingerprint(device),
        created_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
    )
    report = None if on_block is None else (lambda i, s: on_block(device, i, s))
    try:
        with device.context():
            device.reset_peak_memory()  # before building, so weights and data count
            run_block = workload.prepare(device.torch_device)
            measurement = measure(run_block, device.timer, blocks, warmup, report)
            memory = device.peak_memory()
    except torch.cuda.OutOfMemoryError as exc:
        return replace(base, status="oom", error=_one_line(exc))
    except Exception as exc:  # a failure is data: the sweep goes on
        return replace(base, error=_one_line(exc))
    return replace(
        base,
        status="ok",
        measurement=measurement,
        peak_memory=memory.bytes,
        peak_memory_meaning=memory.meaning,
    )


def run_sweep(
    workload: Workload,
    devices: Iterable[Device],
    blocks: int,
    warmup: int = 1,
    on_block: OnBlock | None = None,
    on_result: Callable[[Result], Result] | None = None,
) -> list[Result]:
    """Run on each device in turn; `on_result` (e.g. storing) sees each result as it lands."""
    results = []
    for device in devices:
        result = run_one(workload, device, blocks, warmup, on_block)
        results.append(on_result(result) if on_result else result)
    return results


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".rstrip(": ")
