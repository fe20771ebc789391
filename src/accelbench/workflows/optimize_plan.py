"""`accelbench optimize`: build the ladder for one workload on one device, run each rung in its
own worker with its drift measured, store every result as it lands, and assess them."""

from __future__ import annotations

import argparse
import uuid
from dataclasses import dataclass, field, replace

from ..analysis.metrics import Analyzer
from ..backends import unsupported
from ..core.result import Result
from ..devices import Device, resolve_devices
from ..devices.fingerprint import fingerprint
from ..engine.measure import StopRule
from ..engine.runner import make_spec
from ..engine.track import progress_bar
from ..engine.worker import run_isolated
from ..errors import AccelbenchError, UsageError
from ..store.db import Store
from ..workloads import Workload, WorkloadRef, load_workload
from .benchmark import workload_ref
from .optimize import Rung, Tolerance, Verdict, assess, ladder, levers_not_tried

__all__ = ["Ladder", "plan_ladder", "run_ladder"]

DEFAULT_SECONDS = 10.0  # timed seconds per rung under the adaptive rule


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


def plan_ladder(args: argparse.Namespace) -> Ladder:
    ref = workload_ref(args)
    workload = load_workload(ref)
    devices = resolve_devices(args.device)
    if len(devices) != 1:
        raise UsageError(f"optimize takes one device; {args.device!r} names {len(devices)}")
    device = devices[0]
    base = make_spec(workload, device, mode=args.mode, batch_size=args.batch_size)
    if args.epochs:
        stop = StopRule(blocks=args.epochs, warmup=args.warmup)
    else:
        stop = StopRule(max_time=args.max_time or DEFAULT_SECONDS, warmup=args.warmup)
    rungs = ladder(base, device, workload, args.levers)
    not_tried = levers_not_tried(base, device, workload, args.levers)
    tolerance = Tolerance(args.tolerance, args.min_top1)
    return Ladder(ref, workload, device, rungs, stop, tolerance, args.timeout, not_tried)


def run_ladder(plan: Ladder, store: Store, quiet: bool = False) -> list[Verdict]:
    """Every rung measured and stored, then judged against fp32 eager."""
    analyze = Analyzer(store.calibrations())
    results = []
    with progress_bar(disable=quiet) as bar:
        task = bar.add_task(f"{plan.ref.name} on {plan.device.name}", total=len(plan.rungs))
        for i, rung in enumerate(plan.rungs):
            result = _run_rung(plan, rung, probe=i == 0)  # the verdict needs fp32's probe
            result = analyze(result, plan.workload, plan.device)
            tolerance = vars(plan.tolerance)
            metrics = {**result.metrics, "optimize": {"variant": rung.name, "tolerance": tolerance}}
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
