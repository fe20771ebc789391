"""`accelbench run`: from parsed options to a checked plan, then to stored results.

Planning loads every workload and resolves every device first, so a bad name, a custom model
that does not import or rejects its input shape, or an unavailable device fails in one line
before anything is measured or stored.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from ..analysis.metrics import Analyzer
from ..backends import check_installed, unsupported
from ..cli.main import DEFAULT_WORKLOAD
from ..core.result import Result, RunSpec
from ..devices import Device, resolve_devices
from ..devices.fingerprint import fingerprint
from ..engine.dist import Launch
from ..engine.sweep import Config, LeverValues, Sweep, run_configs
from ..engine.track import progress_bar
from ..engine.worker import run_isolated
from ..errors import UsageError
from ..levers import all_levers, find_lever, label
from ..store.db import Filters, Store
from ..workloads import Workload, WorkloadRef, load_workload

__all__ = ["Plan", "plan", "run_plan", "workload_from", "workload_ref"]


@dataclass(frozen=True)
class Plan:
    sweep: Sweep
    configs: Sequence[Config]
    workloads: dict[WorkloadRef, Workload]
    devices: dict[str, Device]
    timeout: float
    verdict: bool = True  # probe a smaller batch for the bottleneck verdict
    max_batch: bool = False  # search each configuration's largest batch instead
    launch: Launch = Launch()  # where data-parallel processes run


def plan(args: argparse.Namespace) -> Plan:
    refs = [WorkloadRef(name) for name in args.workloads]
    if args.model:
        refs.append(WorkloadRef(args.model, _model_options(args)))
    elif args.input_shape or args.num_classes or args.vocab_size:
        raise UsageError("--input-shape, --num-classes and --vocab-size describe a --model")
    refs = refs or [WorkloadRef(DEFAULT_WORKLOAD)]
    workloads = {ref: load_workload(ref) for ref in refs}
    devices = resolve_devices(args.devices)
    sweep = Sweep(
        workloads=tuple(refs),
        devices=tuple(d.name for d in devices),
        modes=args.modes,
        batch_sizes=args.batch_sizes,
        levers=_lever_values(args),
        backends=_backends(args.backends),
        blocks=args.epochs,
        max_time=args.max_time,
        warmup=args.warmup,
    )
    configs = sweep.configs([workloads[r] for r in refs], devices)
    if args.max_batch and args.batch_sizes != (None,):
        raise UsageError("--max-batch searches the batch size itself; drop --batch-sizes")
    launch = _launch(args)
    return Plan(
        sweep,
        configs,
        workloads,
        {d.name: d for d in devices},
        args.timeout,
        verdict=not args.no_verdict and not args.max_batch,
        max_batch=args.max_batch,
        launch=launch,
    )


def _backends(backends: tuple[str, ...]) -> tuple[str, ...]:
    """The backends asked for, once their packages are known to be installed."""
    check_installed(backends)
    return backends


def _lever_values(args: argparse.Namespace) -> LeverValues:
    """Each lever's values; data parallelism's counted over all nodes, 1 first (the baseline
    of the scaling efficiency)."""
    values = {lever.name: getattr(args, f"lever_{lever.name}") for lever in all_levers()}
    values["processes"] = tuple(int(n) * args.nnodes for n in values["processes"])
    return tuple((lever.name, lever.sweep_values(values[lever.name])) for lever in all_levers())


def _launch(args: argparse.Namespace) -> Launch:
    if args.nnodes > 1 and not args.rdzv_endpoint:
        raise UsageError("--nnodes above 1 needs --rdzv-endpoint HOST:PORT where the nodes meet")
    if args.node_rank >= args.nnodes:
        raise UsageError(f"--node-rank {args.node_rank} is not below --nnodes {args.nnodes}")
    return Launch(
        nodes=args.nnodes,
        node_rank=args.node_rank,
        endpoint=args.rdzv_endpoint,
        timeout=args.timeout,
    )


def workload_ref(args: argparse.Namespace) -> WorkloadRef:
    """The one workload a command names: a registered name, or --model with its options."""
    if bool(args.workload) == bool(args.model):
        raise UsageError("name one workload, or give --model FILE.py:factory (not both)")
    if args.model:
        return WorkloadRef(args.model, _model_options(args))
    return WorkloadRef(args.workload)


def workload_from(args: argparse.Namespace) -> Workload:
    """The one workload a command names, loaded."""
    return load_workload(workload_ref(args))


def _model_options(args: argparse.Namespace) -> object:
    from ..workloads.custom import ModelOptions, parse_shape

    return ModelOptions(
        input_shape=parse_shape(args.input_shape) if args.input_shape else None,
        num_classes=args.num_classes,
        vocab_size=args.vocab_size,
        loss=args.loss,
    )


def run_plan(plan: Plan, store: Store, resume: bool = False, quiet: bool = False) -> list[Result]:
    """Run every configuration not already stored (with --resume), saving each as it lands."""
    done = store.done_specs(plan.sweep.id) if resume else set()
    todo = [c for c in plan.configs if c.spec not in done]
    analyze = Analyzer(store.calibrations())
    # Single-process results of this sweep, the baseline of the data-parallel efficiency.
    singles = {r.spec: r for r in store.results(Filters(sweep=plan.sweep.id)) if resume}
    with progress_bar(disable=quiet) as bar:
        overall = bar.add_task("configurations", total=len(todo))

        def run(config: Config) -> Result:
            spec = config.spec
            total = config.stop.warmup + config.stop.blocks if config.stop.blocks else None
            task = bar.add_task(f"{spec.workload} on {spec.device}: {label(spec)}", total=total)
            advance = lambda i, s: bar.advance(task)  # noqa: E731
            if plan.max_batch:
                result = _search_max_batch(plan, config, advance)
            else:
                result = _run_one(plan, config, on_block=advance)
            result = analyze(result, plan.workloads[config.ref], plan.devices[spec.device])
            if spec.processes == 1 and result.measurement is not None:
                singles[spec] = result
            result = _with_scaling(result, singles)
            bar.remove_task(task)
            bar.advance(overall)
            return result

        return run_configs(todo, run, plan.sweep.id, on_result=store.save)


def _with_scaling(result: Result, singles: dict[RunSpec, Result]) -> Result:
    """Data-parallel results get their scaling efficiency: aggregate throughput over N times
    the single-process throughput of the same configuration, measured in the same sweep."""
    n, aggregate = result.spec.processes, result.samples_per_second
    if n == 1 or aggregate is None:
        return result
    single = singles.get(find_lever("processes").assign(result.spec, 1))
    if single is None or single.samples_per_second is None:
        extra: dict[str, object] = {
            "scaling_unavailable": "the single-process run of this configuration is missing"
        }
    else:
        extra = {
            "single_process_samples_per_s": single.samples_per_second,
            "scaling_efficiency": aggregate / (n * single.samples_per_second),
        }
    return replace(result, metrics={**result.metrics, **extra})


def _search_max_batch(plan: Plan, config: Config, on_block: Callable[[int, float], None]) -> Result:
    """The run at the largest batch that fits, with the search's probes in its metrics."""
    from ..engine.maxbatch import PROBE_STOP, find_max_batch

    probe = replace(config, stop=PROBE_STOP)
    found = find_max_batch(
        config.spec, lambda spec: _run_one(plan, replace(probe, spec=spec), on_block)
    )
    device = plan.devices[config.spec.device]
    metrics = {**found.to_metrics(), "device_memory": device.total_memory}
    if found.largest is None:
        error = found.stopped_by or "not even a batch of 1 fits in memory"
        return Result(
            spec=config.spec,
            status="error" if found.stopped_by else "oom",
            error=error,
            metrics=metrics,
            environment=fingerprint(device),
        )
    return replace(found.largest, metrics={**found.largest.metrics, **metrics})


def _run_one(plan: Plan, config: Config, on_block: Callable[[int, float], None]) -> Result:
    """Unsupported configurations are settled here; the rest run in their own process."""
    device = plan.devices[config.spec.device]
    reason = unsupported(config.spec, device, plan.workloads[config.ref])
    if reason:
        result = Result(spec=config.spec, status="unsupported", error=reason)
    else:
        launch = plan.launch if config.spec.processes > 1 else None
        result = run_isolated(
            config.spec,
            config.ref,
            config.stop,
            plan.timeout,
            on_block,
            probe=plan.verdict,
            launch=launch,
        )
    if not result.environment:  # the worker died before it could describe its machine
        result = replace(result, environment=fingerprint(device))
    return result
