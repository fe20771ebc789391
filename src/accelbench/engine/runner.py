"""Run one configuration in this process, turning failures into results."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from typing import Any

from ..analysis.explanation import ProfileRequest
from ..analysis.facts import DRIFT, MEMORY_TENSORS_ONLY
from ..analysis.metrics import model_facts
from ..backends import Runnable, block_function, build, checks_drift, unsupported
from ..backends.base import backend_for
from ..core.modes import find_mode, mode_of
from ..core.result import Result, RunSpec
from ..core.stats import Measurement
from ..core.vocab import BACKENDS, Status
from ..devices import Device, MemoryReading, is_out_of_memory
from ..devices.base import PeakSampler
from ..devices.fingerprint import fingerprint
from ..devices.power import (
    JOULES_PER_SAMPLE,
    POWER,
    POWER_UNAVAILABLE,
    POWER_WARNING,
    SAMPLES_PER_S_PER_WATT,
    PowerMeter,
)
from ..devices.state import StateMeter
from ..errors import MeasuredFailure, UsageError, one_line
from ..levers import refused_by_model, spec_with, warmup_needed
from ..workloads import Workload
from .facts import (
    CPU_FALLBACK_OPS,
    GAVE_UP_BELOW,
    LATENCY_ERROR,
    MODEL_OUTPUT,
    OWN_STEPS,
    P99_MIN_SAMPLES,
    PARAMETERS,
    SETUP_S,
    Latency,
    Overhead,
)
from .measure import StopRule, measure
from .probe import paired_probe
from .profile import explain_steps, fallback_warnings
from .rounds import Round

__all__ = ["make_spec", "run_config", "run_one"]

MIN_POWER_SECONDS = 3.0  # below this, an energy counter's steps make the average rough
# Latency at batch 1: one step a sample (min_sample_s 0 groups none), 2 s or 100 steps whichever
# is later, 5 s at most; 1,000 steps at most (the tail needs samples, not a tight median).
LATENCY_STOP = StopRule(
    warmup=5,
    max_time=2.0,
    min_samples=P99_MIN_SAMPLES,
    min_blocks=1000,
    max_blocks=1000,
    min_sample_s=0.0,
    time_cap=10.0,  # a CPU model at 50-100 ms a step still reaches its p99
)


def make_spec(workload: Workload, device: Device, **options: Any) -> RunSpec:
    """A RunSpec with the workload's defaults; `options` set RunSpec fields (mode, precision,
    batch_size...) or levers by name (channels_last=True, compile="default"...). UsageError, in
    one line naming the valid choices, for an option that is neither, an unknown mode,
    precision or backend, a size that is not a positive integer, or a lever's bad value."""
    given = {k: v for k, v in options.items() if v is not None}
    fields = {f.name for f in dataclasses.fields(RunSpec)} - {"levers"}
    spec = RunSpec(
        **{
            "workload": workload.name,
            "device": device.name,
            "batch_size": workload.batch_size,
            "steps_per_block": workload.steps_per_block,
            **{k: v for k, v in given.items() if k in fields},
        }
    )
    _check_fields(spec)
    try:
        return spec_with(spec, **{k: v for k, v in given.items() if k not in fields})
    except KeyError as exc:  # a name that is neither a field nor a lever
        raise UsageError(f"{exc.args[0]}; or a field: {', '.join(sorted(fields))}") from None
    except ValueError as exc:  # a lever's value
        raise UsageError(one_line(exc)) from None


def _check_fields(spec: RunSpec) -> None:
    """The spec's fields that are open registries (the modes, the backends'); RunSpec checks
    its closed vocabularies and sizes itself, as it is made."""
    find_mode(spec.mode)  # an unknown one: one line naming the modes registered
    if backend_for(spec.backend) is None:
        raise UsageError(f"unknown backend {spec.backend!r}; valid: {', '.join(BACKENDS)}")


def run_config(
    spec: RunSpec,
    workload: Workload,
    device: Device,
    stop: StopRule,
    on_block: Callable[[int, float], None] | None = None,
    probe: bool = True,
    drift: bool = False,
    profile: ProfileRequest | None = None,
    latency: bool = False,
    process: Round | None = None,
) -> Result:
    """Measure one configuration in this process. Unsupported, a model that cannot take its
    inputs (`Workload.check`), OOM or a crash come back as a failed Result.

    With `probe`, the configuration is timed again briefly at a quarter of the batch, which
    the bottleneck verdict needs; power is read around the timed blocks where the device can.
    With `drift` (always for ONNX Runtime, whose export is worth checking), the outputs are
    compared with the fp32 PyTorch model's on the same inputs (accelbench.drift). With
    `profile`, a few steps are profiled after the samples, for the explanation (engine/profile).
    With `latency`, a single-process inference configuration is timed one step a sample at
    batch 1 too, for the per-request latency (`_latency`).

    `process` says which of the configuration's processes this is (engine/rounds): a later
    one times its share with the first one's grouping of blocks, and its probe, and leaves the
    once-only work (drift, latency, profile, FLOP count) to the first. None: the only one.
    """
    process = process or Round(0, stop, planned=1)
    base = Result(spec=spec, status="error", environment=fingerprint(device))
    reason = unsupported(spec, device, workload)
    if reason:
        return replace(base, status="unsupported", error=reason)
    try:
        workload.check()  # the model's code first runs here: in the worker, under its timeout
        refused = refused_by_model(spec, workload)  # a lever the model itself cannot take
        if refused:
            return replace(base, status="unsupported", error=refused)
        with device.context():
            timed, derived, phases = _time_then_derive(
                spec, workload, device, process, on_block, drift, profile, probe, latency
            )
    except Exception as exc:  # a failure is data: the sweep goes on
        status: Status = "oom" if is_out_of_memory(exc) else "error"
        kept = exc.metrics if isinstance(exc, MeasuredFailure) else {}  # what it did measure
        return replace(base, status=status, error=one_line(exc), metrics=kept)
    # The measurement stands whatever happens below: derived figures only add to it.
    said = {MODEL_OUTPUT: workload.output_note} if workload.output_note else {}
    return _measured(base, timed, {**derived, **said}, phases)


def _time_then_derive(
    spec: RunSpec,
    workload: Workload,
    device: Device,
    process: Round,
    on_block: Callable[[int, float], None] | None,
    drift: bool,
    profile: ProfileRequest | None,
    probe: bool,
    latency: bool,
) -> tuple[_Timed, dict[str, Any], dict[str, float]]:
    """`run_config`'s work on the device: the timed configuration, the figures derived after
    its samples (the paired probe, the latency at batch 1, the model's facts), and where the
    seconds went. The arguments are `run_config`'s."""
    first = process.first
    check_drift = first and (drift or checks_drift(spec))
    timed = _time(spec, workload, device, process, on_block, check_drift, profile)
    step_s = timed.measurement.time.median / spec.steps_per_block
    # The probe feeds the bottleneck verdict; a generation's phases carry their own "why".
    probe = probe and mode_of(spec).probes
    probed, probe_s = _after(probe, paired_probe, timed.prep, workload, device, step_s, process)
    timed = replace(timed, prep=None)  # the device is free for what follows
    single = first and latency and mode_of(spec).forward_only and spec.processes == 1
    latencies, latency_s = _after(single, _latency, spec, workload, device, timed.measurement)
    facts, count_s = _after(first, model_facts, workload, spec)
    phases = _phases(timed, probe_s, latency_s, count_s)
    return timed, {**probed, **latencies, **facts}, phases


def _parameters(prep: Runnable) -> dict[str, Any]:
    """The prepared PyTorch model's parameter count (a backend of its own holds none)."""
    import torch  # here: the worker has it loaded; the command that plans need not

    model = getattr(prep, "model", None)
    if not isinstance(model, torch.nn.Module):
        return {}
    return {PARAMETERS: sum(p.numel() for p in model.parameters())}


def _measured(
    base: Result, timed: _Timed, after: dict[str, Any], phases: dict[str, float]
) -> Result:
    """The configuration's result: its measurement, and what was recorded beside it."""
    metrics = {
        SETUP_S: timed.setup_s,
        **_power(timed.meter, timed.measurement, base.spec),
        **after,
        **timed.recorded,
        MEMORY_TENSORS_ONLY: timed.memory.tensors_only,
    }
    return replace(
        base,
        status="ok",
        measurement=timed.measurement,
        peak_memory=timed.memory.bytes,
        peak_memory_meaning=timed.memory.meaning,
        metrics=Overhead.add(metrics, **phases),
    )


def _after(
    when: bool, phase: Callable[..., dict[str, Any]], *args: Any
) -> tuple[dict[str, Any], float | None]:
    """A phase after the samples (`when` it runs): its figures and seconds, else {} and None."""
    if not when:
        return {}, None
    started = time.perf_counter()
    return phase(*args), time.perf_counter() - started


def _phases(
    timed: _Timed, probe_s: float | None, latency_s: float | None, count_s: float | None
) -> dict[str, float]:
    """Where the configuration's seconds went, beyond building it (only the steps that ran)."""
    phases = {"warmup_s": sum(timed.measurement.warmup), "timed_s": sum(timed.measurement.samples)}
    for name, seconds in (
        ("probe_s", probe_s),
        ("latency_s", latency_s),
        ("drift_s", timed.drift_s),
        ("profile_s", timed.profile_s),
        ("count_s", count_s),
    ):
        if seconds is not None:
            phases[name] = seconds
    return phases


@dataclass(frozen=True)
class _Timed:
    """One configuration built and timed, before the figures derived from it."""

    measurement: Measurement
    memory: MemoryReading
    setup_s: float  # building the model and its inputs, synchronized
    meter: PowerMeter
    recorded: dict[str, Any]  # what the steps or the backend recorded, and the drift
    drift_s: float | None  # seconds the drift check took; None when it did not run
    profile_s: float | None  # seconds the profiled steps took; None when not asked
    prep: Runnable | None  # the configuration built, kept for the probe that pairs with it


def _time(
    spec: RunSpec,
    workload: Workload,
    device: Device,
    process: Round,
    on_block: Callable[[int, float], None] | None,
    drift: bool,
    profile: ProfileRequest | None,
) -> _Timed:
    """Build the configuration and time this process's samples; the first process also
    profiles (where asked) and checks drift."""
    stop = process.stop.at_least(warmup_needed(spec))  # whoever planned it
    profile = profile if process.first else None
    device.reset_peak_memory()  # before building, so weights and data count
    # Only where operators may fall back to the CPU (MPS): PyTorch warns once per operator,
    # during the build or the warm-up, and the names are stored with the result.
    watch = bool(device.cpu_fallback())
    sampler = device.peak_sampler()  # a device with no peak counter (MPS): sampled instead
    with fallback_warnings(active=watch) as fallbacks:
        started = time.perf_counter()
        prep = build(spec, workload, device)
        device.synchronize()
        setup = time.perf_counter() - started
        meter = device.power_meter()  # read over the timed samples, not the warm-up
        state = device.state_meter()
        # the state outermost: its reads of /proc stay out of the energy's interval
        phases: list[AbstractContextManager[Any]] = [state, meter]
        if sampler is not None:
            phases.append(sampler)
        measurement = mode_of(spec).measure(  # the closed loop, unless the mode has its own
            prep,
            lambda: measure(
                block_function(prep), prep.timer, stop, on_block, phases, process.repeat
            ),
        )
    memory = _sampled(prep.peak_memory(), sampler)  # before the drift check builds more
    recorded = _recorded(spec, prep, state, measurement, fallbacks if watch else None)
    recorded.update(_gave_up(stop, measurement))
    profile_s = None
    if profile is not None:  # after the samples, never inside them
        started = time.perf_counter()
        recorded.update(_explained(prep, device, measurement, profile, fallbacks))
        profile_s = time.perf_counter() - started
    drift_s = None
    if drift:
        started = time.perf_counter()
        recorded[DRIFT] = _drift(prep, workload, device)
        drift_s = time.perf_counter() - started
    return _Timed(measurement, memory, setup, meter, recorded, drift_s, profile_s, prep)


def _explained(
    prep: Runnable,
    device: Device,
    measurement: Measurement,
    profile: ProfileRequest,
    fallbacks: list[str],
) -> dict[str, Any]:
    """The profile's record; a mode that measures on its own (serve) has no step time to set
    the profile against."""
    spec = prep.spec
    closed = mode_of(spec).closed_loop
    step_s = measurement.time.median / spec.steps_per_block if closed else None
    return explain_steps(prep, device, step_s, profile, fallbacks)


def _recorded(
    spec: RunSpec,
    prep: Runnable,
    state: StateMeter,
    measurement: Measurement,
    fallbacks: list[str] | None,
) -> dict[str, Any]:
    """What the backend, its steps and the state meter recorded over the samples, with the
    operators that fell back to the CPU where they were watched for (None: not watched)."""
    recorded = {**prep.info, **state.to_metrics(), **_parameters(prep)}
    if fallbacks is not None:
        recorded[CPU_FALLBACK_OPS] = list(dict.fromkeys(fallbacks))
    return mode_of(spec).recorded(recorded, measurement, spec)


def _gave_up(stop: StopRule, measurement: Measurement) -> dict[str, Any]:
    """The rate the samples fell short of, where the rule stopped them early for that."""
    if not stop.gives_up(measurement.samples, measurement.repeat):
        return {}
    return {GAVE_UP_BELOW: stop.give_up_rate}


def _sampled(memory: MemoryReading, sampler: PeakSampler | None) -> MemoryReading:
    """The sampled peak, where the backend reads the device's own memory (PyTorch's): ONNX
    Runtime and Core ML allocate outside it, and say so with no figure."""
    sampled = sampler.reading() if sampler is not None else None
    if sampled is None or sampled.bytes is None or memory.bytes is None:
        return memory
    return replace(sampled, bytes=max(sampled.bytes, memory.bytes))


def _power(meter: PowerMeter, measurement: Measurement, spec: RunSpec) -> dict[str, Any]:
    reading = meter.reading
    if reading is None:
        return {POWER_UNAVAILABLE: meter.unavailable_reason}
    if reading.joules <= 0 or reading.average_watts <= 0:  # the counter did not advance
        return {
            POWER_UNAVAILABLE: f"power not measurable here: {reading.source} read no "
            f"energy over {reading.seconds:.2f} s (its counter steps coarsely); time longer"
        }
    timed = sum(measurement.samples)
    samples = len(measurement.samples) * measurement.repeat * spec.batch_size
    samples *= spec.steps_per_block
    # The meter's interval also holds the gaps between samples: charge the work by timed seconds.
    out: dict[str, Any] = {
        POWER: reading.to_dict(),
        JOULES_PER_SAMPLE: reading.average_watts * timed / samples,
        SAMPLES_PER_S_PER_WATT: samples / timed / reading.average_watts,
    }
    if reading.seconds < MIN_POWER_SECONDS:
        out[POWER_WARNING] = (
            f"power read over only {reading.seconds:.1f} s: counters advance coarsely "
            f"(NVML's about every 100 ms), so this figure is rough; time longer with --max-time"
        )
    return out


def _drift(prep: Runnable, workload: Workload, device: Device) -> dict[str, Any]:
    """The configuration's outputs against the fp32 model's, as its mode checks them: its own
    way (a generation's tokens), or the outputs of the configuration the mode names (training
    is compared at its initial weights, built again for inference, eagerly: see modes/train)."""
    from ..analysis.drift import compare_outputs, reference_outputs

    spec, mode = prep.spec, mode_of(prep.spec)
    try:
        own = mode.own_drift(prep)
        if own is not None:
            return own
        other = mode.drift_spec(spec)
        if other is not None:
            prep = build(other, workload, device)
        candidate = prep.outputs()
        reference = reference_outputs(workload, spec.batch_size)
        return compare_outputs(reference, candidate, classifier=workload.num_classes is not None)
    except Exception as exc:  # the measurement stands; say why there is no drift
        return {"error": one_line(exc)}


def _latency(
    spec: RunSpec, workload: Workload, device: Device, main: Measurement
) -> dict[str, Any]:
    """Per-request latency: the configuration at batch 1, each timed sample one step. A batch-1
    measurement whose samples already were single steps gives it from its own samples."""
    if spec.batch_size == 1 and spec.steps_per_block == 1 and main.repeat == 1:
        return Latency.from_steps(main.samples, OWN_STEPS).to_metrics()
    single = replace(spec, batch_size=1, steps_per_block=1)
    try:
        prep = build(single, workload, device)
        steps = measure(block_function(prep), prep.timer, LATENCY_STOP).samples
    except Exception as exc:  # the main result stands; say why there is no latency
        return {LATENCY_ERROR: one_line(exc)}
    return Latency.from_steps(steps, "each timed alone, after the main samples").to_metrics()


def run_one(
    workload: Workload,
    device: Device,
    blocks: int | None = None,
    warmup: int = 1,
    on_block: Callable[[int, float], None] | None = None,
    probe: bool = False,
    **options: object,
) -> Result:
    """Measure `workload` on `device` in this process (the Python API's simplest entry).

    `blocks` fixes the number of timed blocks; None uses the workload's default or, failing
    that, the adaptive stop rule. `options` set RunSpec fields (mode, precision, batch_size...).
    """
    stop = StopRule(blocks=blocks or workload.default_blocks, warmup=warmup)
    spec = make_spec(workload, device, **options)
    return run_config(spec, workload, device, stop, on_block, probe=probe)
