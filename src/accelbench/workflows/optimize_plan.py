"""Optimization ladders: a typed request becomes the ladder for one workload on one device; each
rung runs in its own worker with its drift measured, is stored as it lands, and is assessed."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field, replace

from ..analysis.metrics import Analyzer
from ..backends import unsupported
from ..core.metrics import OptimizeTag
from ..core.result import Result
from ..devices import Device, pick_device, resolve_devices
from ..devices.fingerprint import fingerprint
from ..engine.measure import StopRule
from ..engine.runner import make_spec
from ..engine.track import progress_bar
from ..engine.worker import run_isolated
from ..errors import AccelbenchError, UsageError
from ..levers import ladder_groups
from ..store.db import Store
from ..workloads import Workload, WorkloadRef, load_workload
from .optimize import Assessment, Rung, Tolerance, assess, ladder, levers_not_tried

__all__ = ["Ladder", "OptimizeRequest", "plan_ladder", "run_ladder"]

DEFAULT_SECONDS = 10.0  # timed seconds per rung under the adaptive rule


@dataclass(frozen=True)
class OptimizeRequest:
    """One workload on one device: which levers to try, how long to time each rung, and how
    far a rung's outputs may drift from fp32's."""

    workload: WorkloadRef
    device: str = ""  # one device name; "": the best available
    mode: str = "infer"
    batch_size: int | None = None  # None: the workload's own
    levers: tuple[str, ...] = field(default_factory=ladder_groups)  # all that apply
    epochs: int | None = None  # time exactly this many its per rung; else the adaptive rule
    max_time: float | None = None  # the adaptive rule's timed seconds (None: DEFAULT_SECONDS)
    warmup: int = 1
    timeout: float = 900.0  # per rung
    tolerance: Tolerance = Tolerance()


@dataclass(frozen=True)
class Ladder:
    ref: WorkloadRef
    workload: Workload
    device: Device
    rungs: list[Rung]
    stop: StopRule
    tolerance: Tolerance
    timeout: float
    not_tried: dict[str, str]  # levers asked for that do not apply here, and why

    # Each run of the ladder is its own sweep: a report draws every ladder against its own
    # fp32 eager, never against another run's or another machine's.
    id: str = field(default_factory=lambda: f"optimize-{uuid.uuid4().hex[:12]}")


def plan_ladder(request: OptimizeRequest) -> Ladder:
    workload = load_workload(request.workload)
    device = _one_device(request.device)
    base = make_spec(workload, device, mode=request.mode, batch_size=request.batch_size)
    if request.epochs:
        stop = StopRule(blocks=request.epochs, warmup=request.warmup)
    else:
        stop = StopRule(max_time=request.max_time or DEFAULT_SECONDS, warmup=request.warmup)
    rungs = ladder(base, device, workload, request.levers)
    not_tried = levers_not_tried(base, device, workload, request.levers)
    return Ladder(
        request.workload,
        workload,
        device,
        rungs,
        stop,
        request.tolerance,
        request.timeout,
        not_tried,
    )


def _one_device(name: str) -> Device:
    if not name:
        return pick_device()
    devices = resolve_devices(name)
    if len(devices) != 1:
        raise UsageError(f"optimize takes one device; {name!r} names {len(devices)}")
    return devices[0]


def run_ladder(plan: Ladder, store: Store, quiet: bool = False) -> list[Assessment]:
    """Every rung measured and stored, then judged against fp32 eager."""
    analyze = Analyzer(store.calibrations())
    results = []
    with progress_bar(disable=quiet) as bar:
        task = bar.add_task(f"{plan.ref.name} on {plan.device.name}", total=len(plan.rungs))
        for i, rung in enumerate(plan.rungs):
            result = _run_rung(plan, rung, probe=i == 0)  # the verdict needs fp32's probe
            result = analyze(result, plan.workload, plan.device)
            tag = OptimizeTag(rung.name, vars(plan.tolerance)).to_metrics()
            metrics = {**result.metrics, **tag}
            results.append(store.save(replace(result, sweep=plan.id, metrics=metrics)))
            bar.advance(task)
    return assess(plan.rungs, results, plan.tolerance)


def _run_rung(plan: Ladder, rung: Rung, probe: bool) -> Result:
    try:
        reason = unsupported(rung.spec, plan.device, plan.workload)
    except AccelbenchError as exc:  # a missing optional package: this rung cannot run
        reason = str(exc)
    if reason:
        result = Result(spec=rung.spec, status="unsupported", error=reason)
    else:
        result = run_isolated(rung.spec, plan.ref, plan.stop, plan.timeout, probe=probe, drift=True)
    if not result.environment:
        result = replace(result, environment=fingerprint(plan.device))
    return result
