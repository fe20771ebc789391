"""Typed reading of `Result.metrics`, the JSON dict of figures derived beyond timing.

Stored JSON keeps its plain keys (so old databases and export files read unchanged); this module
names each key once, says its unit and who writes it, and reads each group of keys into a small
frozen value. Writers use the key constants; readers use `result.facts` (a `Metrics`).

Who writes which keys (units are on each value's fields below):
- engine/probe: probe (the verdict's probe) and probe_machine_state (the machine over it)
- engine/runner: setup_s (s), model_output (a --model's output used), parameters, probe,
  probe_error,
  latency (batch 1, each sample one step), latency_error, drift, power, joules_per_sample,
  samples_per_s_per_watt, power_warning, power_unavailable, memory_tensors_only; overhead's
  warmup_s, timed_s, probe_s, latency_s, drift_s; machine_state (devices/state's reading of
  the host's load and the GPU's clocks over the timed samples)
- engine/profile (with --profile or `explain`): explain (an Explanation, core/explanation),
  explain_error (why there is none); overhead's profile_s
- engine/worker: overhead's start_s, import_s, wall_s (where one configuration's seconds went);
  left_running (engine/reaper: what the model's code left running, stopped)
- analysis/metrics, in the worker's first process: flops_per_sample (FLOP),
  channels_last_applies, prefill_flops_per_sequence and decode_flops_per_sequence (FLOP,
  mode "generate"); and in the parent from those: achieved_flops (FLOP/s), peak_flops
  (FLOP/s), peak_source, mfu (a share), verdict (the bottleneck verdict)
- engine/rounds: rounds (how the configuration's processes were planned and run)
- levers/prune (through the prepared run's info): pruning
- backends/onnxruntime (the same way): onnxruntime
- engine/dist: ranks, world_size
- workflows/benchmark: scaling_efficiency, single_process_samples_per_s, scaling_unavailable;
  device_memory (bytes) beside engine/maxbatch's max_batch, max_batch_probes,
  max_batch_limit_reached, max_batch_stopped_by
- workflows/optimize_plan: optimize (the ladder's variant and tolerance)
- workflows/verify: verify (its results carry no measurement)
- engine/runner, on a device whose operators may fall back to the CPU (MPS with
  PYTORCH_ENABLE_MPS_FALLBACK=1): cpu_fallback_ops (the operators PyTorch said ran on the CPU)
- backends/coreml (through the prepared run's info): coreml (CoreMLFacts), load_s (s: loading,
  which compiles for the device, timed apart from the predictions)
- backends/generate (mode "generate"): generation, the phases timed apart and the bytes a
  decode step reads; analysis/bandwidth adds its bandwidth share and the prefill's MFU
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .explanation import Explanation
from .facts import Fact, check, fact, scalar, stored

__all__ = [
    "COREML",
    "EXPLAIN",
    "LOAD_S",
    "ONNXRUNTIME",
    "Explanation",
    "check_metrics",
    "CoreMLFacts",
    "OnnxRuntimeFacts",
]

ONNXRUNTIME = "onnxruntime"
EXPLAIN = "explain"
COREML = "coreml"
LOAD_S = "load_s"


@fact(ONNXRUNTIME)
@dataclass(frozen=True)
class OnnxRuntimeFacts(Fact):
    """How an ONNX Runtime result was made and timed (`onnxruntime`)."""

    version: str = stored(ONNXRUNTIME, default="")
    exporter: str = ""
    providers: tuple[str, ...] = ()  # the provider asked for, then its fallbacks
    timing: str = ""  # what the timed call includes (host-device copies...)
    caveat: str = ""


@fact(COREML)
@dataclass(frozen=True)
class CoreMLFacts(Fact):
    """How a Core ML result was made and timed (`coreml`): the compute units allowed, the
    precision computed in, and where the compute plan would run the operators."""

    version: str = ""  # coremltools'
    compute_units: str = ""  # ALL, CPU_AND_NE, CPU_AND_GPU or CPU_ONLY
    compute_precision: str = ""  # fp16 or fp32
    compiled: str = ""  # "compiled for this run" or "cached from an earlier run of the sweep"
    operators: int | None = None  # operators of the main function, constants left out
    per_unit: Mapping[str, int] | None = None  # the compute plan's preferred unit -> count
    plan_unavailable: str = ""  # why there are no per-unit counts
    timing: str = ""


# --- end of language-model generation ------------------------------------------------------


LOADING = scalar(LOAD_S, float | None, None)


def check_metrics(metrics: Mapping[str, Any]) -> None:
    """ValueError naming the first key of `metrics` (as `metrics.KEY`) that its fact's type, and
    so a renderer, cannot take (core/facts' `check`)."""
    check(metrics)
