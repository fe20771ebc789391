"""Explain one configuration: measure it, then profile a few steps, and say where time went.

`accelbench explain` and `accelbench.explain` come here. The measurement is the benchmark's
(same worker, same stop rule, stored the same way); the profiled steps run after it.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from ..analysis.explanation import Explanation, ProfileRequest
from ..core.result import Result
from ..engine.facts import EXPLAIN_FAILURE
from ..errors import AccelbenchError, UsageError
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
    found = result.facts.get(Explanation)
    if found is None:
        raise AccelbenchError(result.facts.get(EXPLAIN_FAILURE) or "the step was not profiled")
    return found


def explain(request: BenchmarkRequest, *, db: str | Path | None = None) -> Explanation:
    """Measure the one configuration `request` names as `accelbench run` does, profile a few
    steps after its samples, and return where the step's time went (`accelbench explain`).

    The request is `benchmark`'s (one workload, device, mode, batch size and lever value);
    `devices="best"` is the best available device. Without a `profile` it is profiled with
    no trace file. UsageError when it names more than one configuration."""
    if not isinstance(request, BenchmarkRequest):
        raise UsageError(
            "explain takes a BenchmarkRequest naming one configuration, e.g. "
            "explain(BenchmarkRequest(workloads='seed-cnn', devices='cuda'))"
        )
    if request.devices == "best":
        from ..devices import pick_device

        request = replace(request, devices=pick_device().name)
    request = replace(request, profile=request.profile or ProfileRequest())
    results = run_stored(one_configuration(request), db)
    return explained(results[0])
