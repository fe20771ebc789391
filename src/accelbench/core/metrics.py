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

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

from .explanation import Explanation
from .facts import Fact, check, fact, scalar, stored

__all__ = [
    "COREML",
    "CPU_FALLBACK_OPS",
    "DEVICE_MEMORY",
    "EXPLAIN",
    "EXPLAIN_ERROR",
    "LATENCY",
    "LEFT_RUNNING",
    "LATENCY_ERROR",
    "LOAD_S",
    "MAX_BATCH",
    "MAX_BATCH_LIMIT_REACHED",
    "MAX_BATCH_PROBES",
    "MAX_BATCH_STOPPED_BY",
    "MODEL_OUTPUT",
    "ONNXRUNTIME",
    "OPTIMIZE",
    "OVERHEAD",
    "OWN_STEPS",
    "Explanation",
    "PairedInterval",
    "P99_MIN_SAMPLES",
    "PARAMETERS",
    "percentiles",
    "PROBE_ERROR",
    "RANKS",
    "SCALING_EFFICIENCY",
    "SCALING_UNAVAILABLE",
    "SETUP_S",
    "SINGLE_PROCESS_SAMPLES_PER_S",
    "VERIFY",
    "WORLD_SIZE",
    "check_metrics",
    "CoreMLFacts",
    "Latency",
    "MaxBatchSearch",
    "OnnxRuntimeFacts",
    "OptimizeTag",
    "Overhead",
    "Parallel",
    "RankFigures",
    "Verification",
]

SETUP_S = "setup_s"
PROBE_ERROR = "probe_error"
LATENCY = "latency"
LATENCY_ERROR = "latency_error"
RANKS = "ranks"
WORLD_SIZE = "world_size"
SCALING_EFFICIENCY = "scaling_efficiency"
SINGLE_PROCESS_SAMPLES_PER_S = "single_process_samples_per_s"
SCALING_UNAVAILABLE = "scaling_unavailable"
MAX_BATCH = "max_batch"
MAX_BATCH_PROBES = "max_batch_probes"
MAX_BATCH_LIMIT_REACHED = "max_batch_limit_reached"
MAX_BATCH_STOPPED_BY = "max_batch_stopped_by"
DEVICE_MEMORY = "device_memory"
ONNXRUNTIME = "onnxruntime"
OPTIMIZE = "optimize"
VERIFY = "verify"
OVERHEAD = "overhead"
EXPLAIN = "explain"
EXPLAIN_ERROR = "explain_error"
# The Mac paths (issue 14): MPS's CPU fallback, and Core ML.
CPU_FALLBACK_OPS = "cpu_fallback_ops"
COREML = "coreml"
LOAD_S = "load_s"
# Which of a --model's outputs was timed and trained on, where its forward returns more than a
# tensor ("timed on the logits of its SequenceClassifierOutput; trained with its own loss").
MODEL_OUTPUT = "model_output"
# The measured model's parameters (elements), counted on the model as prepared (after a lever
# such as pruning changed it); absent where the backend holds no PyTorch module.
PARAMETERS = "parameters"
# Processes the model's code left running once its worker had ended, stopped by engine/reaper
# ("pid 4242 python3"), over every process of the configuration.
LEFT_RUNNING = "left_running"


# Below this many steps a 99th percentile is the slowest step or next to it, not a figure.
P99_MIN_SAMPLES = 100


def percentiles(values: Sequence[float]) -> tuple[float, float, float | None]:
    """p50, p90 and p99 (numpy's linear percentiles); p99 is None below P99_MIN_SAMPLES."""
    if not values:
        raise ValueError("no values to take percentiles of")
    cuts = statistics.quantiles(values, n=100, method="inclusive") if len(values) > 1 else []
    p50, p90, p99 = (cuts[q - 1] if cuts else values[0] for q in (50, 90, 99))
    return p50, p90, (p99 if len(values) >= P99_MIN_SAMPLES else None)


# A latency taken from the configuration's own samples (batch 1, one step each): over several
# processes, from all of theirs.
OWN_STEPS = "the main samples, each one step"


@fact(LATENCY)
@dataclass(frozen=True)
class Latency(Fact):
    """Per-request latency (`latency`): the configuration at batch 1, each timed sample one
    step, the device synchronized at the step's boundaries; percentiles in seconds."""

    batch_size: int
    samples: int  # steps timed
    p50_s: float
    p90_s: float
    p99_s: float | None  # None below P99_MIN_SAMPLES steps
    steps_s: tuple[float, ...]  # every timed step in the order timed, for re-analysis
    source: str = ""  # how the steps were taken

    @classmethod
    def from_steps(cls, steps: Sequence[float], source: str) -> Latency:
        """The figures of these single-step timings at batch 1 (numpy's linear percentiles)."""
        if not steps:
            raise ValueError("no steps to take percentiles of")
        # 1 ns is finer than any device timer; rounding keeps the stored record small
        kept = tuple(round(float(s), 9) for s in steps)
        p50, p90, p99_s = percentiles(kept)
        return cls(1, len(kept), p50, p90, p99_s, kept, source)


@dataclass(frozen=True)
class RankFigures:
    """One data-parallel process's own figures."""

    rank: int
    device: str
    it_per_s: float  # median
    samples_per_s: float | None = None
    peak_memory: int | None = None  # bytes


@fact(RANKS, flat=True)
@dataclass(frozen=True)
class Parallel(Fact):
    """A data-parallel run (`ranks`, `world_size`) and its scaling against one process."""

    world_size: int
    ranks: tuple[RankFigures, ...]
    scaling_efficiency: float | None = None  # aggregate / (N x one process), a share
    single_process_samples_per_s: float | None = None
    scaling_unavailable: str = ""  # why there is no scaling efficiency


@fact(MAX_BATCH, flat=True)
@dataclass(frozen=True)
class MaxBatchSearch(Fact):
    """The search for the largest batch that fits in the device's memory."""

    largest: int = stored(MAX_BATCH)  # 0 when not even a batch of 1 fitted
    # (batch size, status) in the order tried
    probes: tuple[tuple[int, str], ...] = stored(MAX_BATCH_PROBES, default=())
    # the search stopped at its own limit, not the memory's
    limit_reached: bool = stored(MAX_BATCH_LIMIT_REACHED, default=False)
    stopped_by: str = stored(MAX_BATCH_STOPPED_BY, default="")  # an error other than memory
    device_memory: int | None = stored(DEVICE_MEMORY, default=None)  # bytes


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


@fact(OPTIMIZE)
@dataclass(frozen=True)
class OptimizeTag(Fact):
    """Marks a result as one variant of an `accelbench optimize` ladder (`optimize`)."""

    variant: str  # the rung's name, e.g. "fp32 eager"
    tolerance: Mapping[str, float] | None = None  # the ladder's Tolerance fields, as stored


@fact(OVERHEAD)
@dataclass(frozen=True)
class Overhead(Fact):
    """Where one isolated configuration's wall time went (`overhead`), in seconds; None where
    not recorded (a failed run, an in-process run without a worker, a step that did not run).
    Over several processes, each figure is their sum.

    start_s runs from the parent's call to the worker's first line (with spawn it holds most
    of the imports, done while unpickling the job); import_s is the worker's own imports and
    loading the workload; setup_s is the runner's `setup_s` (building the model), read from
    beside this group; wall_s is the parent's whole call, so the rest of wall_s is the result's
    way back and the process's end.
    """

    start_s: float | None = None
    import_s: float | None = None
    setup_s: float | None = stored(SETUP_S, beside=True, default=None)
    warmup_s: float | None = None  # the measurement's warm-up blocks
    timed_s: float | None = None  # the timed samples
    probe_s: float | None = None  # the bottleneck probe at a quarter of the batch
    latency_s: float | None = None  # the single steps timed at batch 1 for the latency
    drift_s: float | None = None  # the drift check against fp32
    profile_s: float | None = None  # the profiled steps after the samples (--profile, explain)
    count_s: float | None = None  # counting FLOPs and checking channels_last (first process)
    wall_s: float | None = None

    @property
    def beyond_timed_s(self) -> float | None:
        """What isolating and preparing the configuration cost on top of its timed seconds."""
        return None if self.wall_s is None else self.wall_s - (self.timed_s or 0.0)

    @classmethod
    def add(cls, metrics: Mapping[str, Any], **seconds: float) -> dict[str, Any]:
        """A copy of `metrics` with `seconds` added to its overhead group (each writer adds the
        phases it sees). TypeError for a name that is not a field, so a typo cannot pass."""
        names = {f.name for f in fields(cls)} - {SETUP_S}  # setup_s stays where it always was
        unknown = sorted(set(seconds) - names)
        if unknown:
            raise TypeError(f"not overhead fields: {unknown}; the fields are {sorted(names)}")
        found = metrics.get(OVERHEAD)
        return {**metrics, OVERHEAD: {**(found if isinstance(found, Mapping) else {}), **seconds}}


@dataclass(frozen=True)
class PairedInterval:
    """Verify's paired 95% interval of a run's accuracy difference, in points."""

    ci95_low_points: float
    ci95_high_points: float


@fact(VERIFY)
@dataclass(frozen=True)
class Verification(Fact):
    """What `accelbench verify` recorded (`verify`); such results carry no measurement.

    Losses are mean training losses per epoch (None where not finite); accuracies are held-out
    shares; deviations are fractions of the CPU fp32 baseline's first-epoch loss.
    """

    verdict: str = ""  # "baseline", "ok", "diverges", "inconclusive", or a failed run's status
    reasons: tuple[str, ...] = ()
    inconclusive_because: str = ""
    loss_curve: tuple[float | None, ...] | None = None  # None: the run did not train
    accuracy: float | None = None
    is_baseline: bool = False
    accuracy_diff_points: float | None = None  # against the baseline, percentage points
    # the paired 95% interval of that difference, points, and its sentence against the tolerance
    paired: PairedInterval | None = None
    accuracy_note: str = ""
    held_out_correct: str = ""  # per held-out image, in order: "1" right, "0" wrong
    max_loss_deviation: float | None = None
    final_loss_deviation: float | None = None
    data: str = ""  # the data set, described
    optimizer: str = ""
    epochs: int | None = None
    lr: float | None = None
    tolerance_points: float = 0.0  # accuracy points a run may differ by
    loss_tolerance: float = 0.0  # final loss deviation a run may have
    seed: int | None = None

    @property
    def accuracy_ci_points(self) -> tuple[float, float] | None:
        """The paired interval, points; None before verify recorded one."""
        found = self.paired
        return None if found is None else (found.ci95_low_points, found.ci95_high_points)


# --- end of language-model generation ------------------------------------------------------


# --- single values stored flat ------------------------------------------------------------
SETUP = scalar(SETUP_S, float | None, None)
PROBE_FAILURE = scalar(PROBE_ERROR, str, "")
LATENCY_FAILURE = scalar(LATENCY_ERROR, str, "")
EXPLAIN_FAILURE = scalar(EXPLAIN_ERROR, str, "")
FALLBACK_OPS = scalar(CPU_FALLBACK_OPS, tuple[str, ...], ())
LOADING = scalar(LOAD_S, float | None, None)
OUTPUT_USED = scalar(MODEL_OUTPUT, str, "")
PARAMETER_COUNT = scalar(PARAMETERS, int | None, None)
LEFT = scalar(LEFT_RUNNING, tuple[str, ...], ())


def check_metrics(metrics: Mapping[str, Any]) -> None:
    """ValueError naming the first key of `metrics` (as `metrics.KEY`) that its fact's type, and
    so a renderer, cannot take (core/facts' `check`)."""
    check(metrics)
