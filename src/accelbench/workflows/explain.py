"""Explain one configuration: measure it, then profile a few steps, and say where time went.

`accelbench explain` and `accelbench.explain` come here. The measurement is the benchmark's
(same worker, same stop rule, stored the same way); the profiled steps run after it.
"""

from __future__ import annotations

from pathlib import Path

from ..core.explanation import Explanation, ProfileRequest
from ..core.modes import DEFAULT_MODE
from ..core.result import Result, Value
from ..errors import AccelbenchError, UsageError
from ..workloads import WorkloadRef
from .benchmark import BenchmarkRequest, Plan, plan, run_stored

__all__ = ["explain", "explained", "one_configuration"]


def one_configuration(request: BenchmarkRequest) -> Plan:
    """The checked plan of a request that must name exactly one configuration."""
    checked = plan(request)
    if len(checked.configs) != 1:
        specs = ", ".join(sorted({c.spec.device for c in checked.configs}))
        raise UsageError(
            f"explain takes one configuration; these options make {len(checked.configs)} "
            f"(devices: {specs}): give one value to each option"
        )
    return checked


def explained(result: Result) -> Explanation:
    """The result's explanation, or AccelbenchError saying why it has none."""
    if result.status != "ok":
        raise AccelbenchError(f"{result.spec.workload}: {result.status}: {result.error}")
    found = result.facts.explanation
    if found is None:
        raise AccelbenchError(result.facts.explain_error or "the step was not profiled")
    return found


def explain(
    workload: str | WorkloadRef = "seed-cnn",
    device: str | None = None,
    mode: str = DEFAULT_MODE,
    batch_size: int | None = None,
    *,
    trace: str | Path | None = None,
    epochs: int | None = None,
    max_time: float | None = None,
    timeout: float = 900.0,
    db: str | Path | None = None,
    **levers: Value,
) -> Explanation:
    """Measure one configuration as `accelbench run` does, profile a few steps after its
    samples, and return where the step's time went (`accelbench explain`). `device` defaults
    to the best available one; levers go by name with one value each (precision="bf16")."""
    from ..devices import pick_device

    ref = workload if isinstance(workload, WorkloadRef) else WorkloadRef(workload)
    request = BenchmarkRequest(
        workloads=(ref,),
        devices=device or pick_device().name,
        modes=(mode,),
        batch_sizes=(batch_size,),
        levers={name: (value,) for name, value in levers.items()},
        epochs=epochs,
        max_time=max_time,
        timeout=timeout,
        profile=ProfileRequest(trace=str(trace or "")),
    )
    results = run_stored(one_configuration(request), db)
    return explained(results[0])
