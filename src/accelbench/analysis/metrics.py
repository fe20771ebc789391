"""Figures derived from a measured result: FLOPs, achieved FLOP/s, MFU, and the verdict.

FLOPs are counted by the configuration's first worker process (`model_facts`: the user's model
runs nowhere else), on PyTorch's meta device where the model allows it, so counting costs no
compute; per-sample figures scale to any batch. The parent (`Analyzer`) only divides: peak
figures come from a calibration stored for the device, else from the table of known devices.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import torch

from ..analysis.verdict import VERDICT
from ..core.levels import log_interval
from ..core.modes import mode_of
from ..core.peaks import PeakFigures
from ..core.result import Result, RunSpec
from ..core.stats import Measurement
from ..devices import HOST_DEVICE, Device
from ..devices.peaks import known_peaks
from ..devices.state import PROBE_MACHINE_STATE, MachineState
from ..workloads import Workload
from ..workloads.base import channels_last_refusal
from ..workloads.inputs import to_device
from .explanation import Explanation
from .facts import (
    ACHIEVED_FLOPS,
    CHANNELS_LAST_APPLIES,
    FLOPS_PER_SAMPLE,
    MFU,
    PEAK_FLOPS,
    PEAK_SOURCE,
    TENSORS_ONLY,
    Probe,
    Pruning,
)
from .trust import machine_caveats
from .verdict import Timing, judge

__all__ = ["Analyzer", "count_flops_per_sample", "model_facts"]

_COUNT_BATCH = 2


def count_flops_per_sample(workload: Workload, mode: str) -> float | None:
    """FLOPs per sample of one train or infer step; None when the model cannot be counted."""
    from .flops import count_flops

    for device in ("meta", HOST_DEVICE):  # meta costs nothing; some models only build for real
        try:
            return _count_on(workload, mode, torch.device(device), count_flops)
        except Exception:  # noqa: S112  (try the next device; None says "not counted")
            continue
    return None


def channels_last_applies(workload: Workload) -> bool:
    """Whether the model's forward takes channels_last inputs (image models only)."""
    return workload.images and channels_last_refusal(workload) is None


def _count_on(workload: Workload, mode: str, device: torch.device, count: Any) -> float:
    with device:
        model = workload.build_model()
    inputs, targets = workload.make_batch(torch.Generator().manual_seed(0), _COUNT_BATCH)
    inputs, targets = to_device(inputs, device), targets.to(device)
    loss = (lambda out: workload.loss(out, targets)) if mode_of(mode).trains else None
    return float(count(model, inputs, workload.forward, loss)) / _COUNT_BATCH


def model_facts(workload: Workload, spec: RunSpec) -> dict[str, Any]:
    """What the parent needs to know of the model to derive its figures, found by running the
    model's code here, in the worker: FLOPs per sample of the mode's step, whether its forward
    takes channels_last inputs; or what the mode itself counts (`Mode.model_facts`)."""
    own = mode_of(spec).model_facts(workload, spec)
    if own is not None:
        return own
    return {
        FLOPS_PER_SAMPLE: count_flops_per_sample(workload, spec.mode),
        CHANNELS_LAST_APPLIES: channels_last_applies(workload),
    }


def _number(value: Any) -> float | None:
    return None if value is None else float(value)


class Analyzer:
    """Adds derived figures to results from what their worker recorded and the device's peaks;
    it never runs the model."""

    def __init__(self, calibrated: dict[str, PeakFigures] | None = None) -> None:
        self._calibrated = calibrated or {}  # device model -> figures measured here

    def peaks(self, device: Device) -> PeakFigures | None:
        return self._calibrated.get(device.model) or known_peaks(device.model)

    def __call__(self, result: Result, device: Device, witness: Result | None = None) -> Result:
        """`result` with its derived figures; `witness`, a stored profile of the same
        configuration on the same machine, lends the verdict its busy share."""
        if result.measurement is None:
            return result
        own = mode_of(result.spec).derive(result, self.peaks(device))
        if own is not None:  # a mode with figures of its own (a generation's phases)
            return own
        # Channel pruning made the model itself cheaper: its worker counted the pruned model.
        pruning = result.facts.get(Pruning)
        per_sample = _number(result.metrics.get(FLOPS_PER_SAMPLE))
        if pruning is not None and pruning.flops_per_sample is not None:
            per_sample = pruning.flops_per_sample
        channels_last = bool(result.metrics.get(CHANNELS_LAST_APPLIES, True))
        figures = self._figures(
            result, per_sample, self.peaks(device), device, channels_last, witness
        )
        return replace(result, metrics={**result.metrics, **figures})

    def _figures(
        self,
        result: Result,
        per_sample: float | None,
        peaks: PeakFigures | None,
        device: Device,
        channels_last: bool,
        witness: Result | None,
    ) -> dict[str, Any]:
        spec, m = result.spec, result.measurement
        assert m is not None
        step_s = m.time.median / spec.steps_per_block
        out: dict[str, Any] = {}
        flops_per_step = None if per_sample is None else per_sample * spec.batch_size
        if per_sample is not None and flops_per_step is not None:
            out[FLOPS_PER_SAMPLE] = per_sample
            out[ACHIEVED_FLOPS] = flops_per_step / step_s
        peak = peaks.flops.get(spec.precision) if peaks else None
        if peak and flops_per_step:
            out[PEAK_FLOPS] = peak
            out[PEAK_SOURCE] = peaks.source if peaks else ""
            out[MFU] = flops_per_step / step_s / peak
        probe = result.facts.get(Probe)
        memory = result.peak_memory if result.facts.get(TENSORS_ONLY) else None
        timing = Timing(
            batch=spec.batch_size,
            step_s=step_s,
            probe_batch=probe.batch_size if probe else None,
            probe_step_s=probe.step_time_s if probe else None,
            flops_per_step=flops_per_step,
            peak_flops=peak,
            bandwidth=peaks.bandwidth if peaks else None,
            # A training step writes its saved activations and reads them back; inference
            # mostly reads. The peak working set once (inference) or twice (training) estimates
            # the step's traffic; caches in the peak make it rough, so the verdict says so.
            bytes_per_step=(2.0 if mode_of(spec).trains else 1.0) * memory if memory else None,
            step_ci=_per_step_ci(m, spec.steps_per_block),
            probe_ci=probe.ci if probe else None,
            paired_growth=_paired_growth(probe),
            processes=m.processes,
            pairs=(probe.blocks or 0) if probe else 0,
            paired_step_s=_paired_step(probe),
            graphs=device.can_capture_graphs,
            faster_precisions=_faster_than_fp32(peaks),
            channels_last=channels_last,
            caveat=_decisive_machine(result),
            **_profile_evidence(result, witness),
        )
        out[VERDICT] = judge(timing).to_dict()
        return out


def _decisive_machine(result: Result) -> str:
    """What of the machine, over the timed samples or the probe, no verdict can stand with."""
    facts = result.facts
    found = [
        *machine_caveats(facts.get(MachineState)),
        *machine_caveats(facts.get(MachineState, PROBE_MACHINE_STATE), "the verdict's probe"),
    ]
    return "; ".join(dict.fromkeys(c.text for c in found if c.decisive))


def _per_step_ci(m: Measurement, steps_per_block: int) -> tuple[float, float] | None:
    time = m.time
    if time.ci_low is None or time.ci_high is None:
        return None
    return time.ci_low / steps_per_block, time.ci_high / steps_per_block


def _paired_growth(probe: Probe | None) -> tuple[float, float, float, int] | None:
    """How much longer a step took at the batch than at the probe's, each process's blocks of
    the two timed in alternation (engine/probe): the geometric mean of the processes' ratios,
    its 95% interval and the processes; in one process, its pairs' median ratio, their
    interval and the pairs. Only the processes whose probe ran have a ratio, and only they
    count (a process whose probe failed has none, and the main samples over the probe's step
    would mix figures timed apart). None where the probe recorded no ratio (before issue 25)."""
    if probe is None or not probe.growth:
        return None
    if len(probe.growth) >= 2:
        found = log_interval(probe.growth)
        assert found is not None
        return found.center, found.low, found.high, found.count
    if len(probe.growth) == 1 and probe.growth_ci_low is not None:
        assert probe.growth_ci_high is not None
        return probe.growth[0], probe.growth_ci_low, probe.growth_ci_high, 1
    return None


def _paired_step(probe: Probe | None) -> float | None:
    """The step at the batch over the probe's pairs, as `Probe.step_time_s` is the probe's:
    the processes' medians' geometric mean. None where not recorded for every process."""
    if probe is None or not probe.paired_steps or len(probe.paired_steps) != len(probe.steps):
        return None
    return math.exp(sum(map(math.log, probe.paired_steps)) / len(probe.paired_steps))


def _profile_evidence(result: Result, witness: Result | None) -> dict[str, Any]:
    """What the verdict takes from the step's profile, where it was profiled on a device: its
    own (`run --profile`), else `witness`'s, a stored profile of the same configuration on
    the same machine (`accelbench explain`)."""
    found, source = result.facts.get(Explanation), ""
    if (found is None or found.busy_share is None) and witness is not None:
        found, source = (
            witness.facts.get(Explanation),
            f" (explain's profile, result #{witness.id})",
        )
    if found is None or found.busy_share is None:
        return {}
    return {
        "busy_share": found.busy_share,
        "kernels_per_step": found.kernels_per_step,
        "mean_kernel_s": found.mean_kernel_s,
        "busy_source": source,
    }


def _faster_than_fp32(peaks: PeakFigures | None) -> tuple[str, ...]:
    """The low precisions whose peak beats fp32's here; none known without peak figures."""
    if peaks is None or not peaks.flops.get("fp32"):
        return ()
    fp32 = peaks.flops["fp32"]
    return tuple(p for p in ("tf32", "bf16", "fp16") if (peaks.flops.get(p) or 0) > fp32)
