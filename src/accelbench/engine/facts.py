"""What the engine records of a configuration beyond its timing, as typed values stored in
`Result.metrics` (core/facts); torch-free, so that the renderers of stored results read them
without importing torch.

Writers: engine/runner (setup_s, latency, latency_error, probe_error, parameters,
model_output, memory_tensors_only, cpu_fallback_ops), engine/worker and engine/profile
(overhead, left_running, explain_error), engine/dist (ranks, world_size; workflows/benchmark
adds the scaling), engine/maxbatch (max_batch and the figures beside it).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

from ..core.facts import Fact, fact, scalar, stored

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
OVERHEAD = "overhead"
EXPLAIN_ERROR = "explain_error"
# The optimization search's early stop (StopRule.give_up_rate): the block rate a process fell
# short of with its fastest sample, where it stopped timing for that.
GAVE_UP_BELOW = "gave_up_below"
# The Mac paths (issue 14): MPS's CPU fallback, and Core ML.
CPU_FALLBACK_OPS = "cpu_fallback_ops"
# Which of a --model's outputs was timed and trained on, where its forward returns more than a
# tensor ("timed on the logits of its SequenceClassifierOutput; trained with its own loss").
MODEL_OUTPUT = "model_output"
# The measured model's parameters (elements), counted on the model as prepared (after a lever
# such as pruning changed it); absent where the backend holds no PyTorch module.
PARAMETERS = "parameters"
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


# --- single values stored flat ------------------------------------------------------------
SETUP = scalar(SETUP_S, float | None, None)
PROBE_FAILURE = scalar(PROBE_ERROR, str, "")
LATENCY_FAILURE = scalar(LATENCY_ERROR, str, "")
EXPLAIN_FAILURE = scalar(EXPLAIN_ERROR, str, "")
FALLBACK_OPS = scalar(CPU_FALLBACK_OPS, tuple[str, ...], ())
OUTPUT_USED = scalar(MODEL_OUTPUT, str, "")
PARAMETER_COUNT = scalar(PARAMETERS, int | None, None)
