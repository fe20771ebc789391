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

import functools
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields, is_dataclass
from types import UnionType
from typing import Any, Union, get_args, get_origin, get_type_hints

from .explanation import Explanation

__all__ = [
    "ACHIEVED_FLOPS",
    "COREML",
    "CHANNELS_LAST_APPLIES",
    "CPU_FALLBACK_OPS",
    "DECISIVE_MARGIN",
    "DECODE_FLOPS_PER_SEQUENCE",
    "DEVICE_MEMORY",
    "DRIFT",
    "EXPLAIN",
    "EXPLAIN_ERROR",
    "FLOPS_PER_SAMPLE",
    "GENERATION",
    "JOULES_PER_SAMPLE",
    "MACHINE_STATE",
    "LATENCY",
    "LEFT_RUNNING",
    "LATENCY_ERROR",
    "LOAD_S",
    "MAX_BATCH",
    "MAX_BATCH_LIMIT_REACHED",
    "MAX_BATCH_PROBES",
    "MAX_BATCH_STOPPED_BY",
    "MEMORY_TENSORS_ONLY",
    "MFU",
    "MODEL_OUTPUT",
    "ONNXRUNTIME",
    "OPTIMIZE",
    "OVERHEAD",
    "OPTIMIZE_POLICY",
    "OWN_STEPS",
    "P99_MIN_SAMPLES",
    "PROBE_MACHINE_STATE",
    "PARAMETERS",
    "percentiles",
    "PEAK_FLOPS",
    "PEAK_SOURCE",
    "PREFILL_FLOPS_PER_SEQUENCE",
    "POWER",
    "POWER_UNAVAILABLE",
    "POWER_WARNING",
    "PROBE",
    "PROBE_ERROR",
    "PRUNING",
    "RANKS",
    "ROUNDS",
    "SAMPLES_PER_S_PER_WATT",
    "SCALING_EFFICIENCY",
    "SCALING_UNAVAILABLE",
    "SETUP_S",
    "SINGLE_PROCESS_SAMPLES_PER_S",
    "VERDICT",
    "VERIFY",
    "WORLD_SIZE",
    "check_metrics",
    "Bottleneck",
    "CoreMLFacts",
    "Drift",
    "Flops",
    "Generation",
    "Latency",
    "MachineState",
    "MaxBatchSearch",
    "Metrics",
    "OnnxRuntimeFacts",
    "OptimizeTag",
    "Overhead",
    "Parallel",
    "Power",
    "Probe",
    "Pruning",
    "RankFigures",
    "Rounds",
    "Verification",
]

SETUP_S = "setup_s"
PROBE = "probe"
PROBE_ERROR = "probe_error"
LATENCY = "latency"
LATENCY_ERROR = "latency_error"
DRIFT = "drift"
POWER = "power"
JOULES_PER_SAMPLE = "joules_per_sample"
SAMPLES_PER_S_PER_WATT = "samples_per_s_per_watt"
POWER_WARNING = "power_warning"
POWER_UNAVAILABLE = "power_unavailable"
FLOPS_PER_SAMPLE = "flops_per_sample"
ACHIEVED_FLOPS = "achieved_flops"
PEAK_FLOPS = "peak_flops"
PEAK_SOURCE = "peak_source"
MFU = "mfu"
VERDICT = "verdict"
MEMORY_TENSORS_ONLY = "memory_tensors_only"
PRUNING = "pruning"
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
MACHINE_STATE = "machine_state"
# The same, over the verdict's probe (engine/probe): what else ran while the two batches were
# timed in alternation decides whether their ratio can carry a verdict.
PROBE_MACHINE_STATE = "probe_machine_state"
# The Mac paths (issue 14): MPS's CPU fallback, and Core ML.
CPU_FALLBACK_OPS = "cpu_fallback_ops"
COREML = "coreml"
LOAD_S = "load_s"
# What the first process learns of the model itself, so the parent never calls the user's code
# (issue 25): whether its forward takes channels_last inputs, and a generation's forward FLOPs.
CHANNELS_LAST_APPLIES = "channels_last_applies"
# Which of a --model's outputs was timed and trained on, where its forward returns more than a
# tensor ("timed on the logits of its SequenceClassifierOutput; trained with its own loss").
MODEL_OUTPUT = "model_output"
# The measured model's parameters (elements), counted on the model as prepared (after a lever
# such as pruning changed it); absent where the backend holds no PyTorch module.
PARAMETERS = "parameters"
# Processes the model's code left running once its worker had ended, stopped by engine/reaper
# ("pid 4242 python3"), over every process of the configuration.
LEFT_RUNNING = "left_running"
PREFILL_FLOPS_PER_SEQUENCE = "prefill_flops_per_sequence"
DECODE_FLOPS_PER_SEQUENCE = "decode_flops_per_sequence"


def _group(metrics: Mapping[str, Any], key: str) -> Mapping[str, Any] | None:
    """The nested object stored under `key`, or None when it is absent or empty."""
    found = metrics.get(key)
    return found if isinstance(found, Mapping) and found else None


def _number(found: Mapping[str, Any], key: str) -> float | None:
    value = found.get(key)
    return None if value is None else float(value)


def _integer(found: Mapping[str, Any], key: str) -> int | None:
    value = found.get(key)
    return None if value is None else int(value)


@dataclass(frozen=True)
class Probe:
    """The same configuration timed at a smaller batch (`probe`), for the bottleneck verdict:
    since issue 25 in alternation with the configuration itself (engine/probe)."""

    batch_size: int
    step_time_s: float  # seconds per step: the median, or over processes their geometric mean
    blocks: int | None = None  # timed blocks behind the median; None where not recorded
    ci_low: float | None = None  # the first process's median step's 95% CI, seconds
    ci_high: float | None = None
    # each process's median step, in the order the processes ran; empty in results stored
    # before processes were repeated
    steps: tuple[float, ...] = ()
    # each process's median ratio of the step at the batch to the probe's, its blocks timed
    # in alternation (engine/probe); and the first process's pairs' 95% CI of that ratio
    # (order statistics), for a verdict from one process
    growth: tuple[float, ...] = ()
    growth_ci_low: float | None = None
    growth_ci_high: float | None = None

    @classmethod
    def from_metrics(cls, metrics: Mapping[str, Any]) -> Probe | None:
        found = _group(metrics, PROBE)
        if found is None:
            return None
        return cls(
            int(found["batch_size"]),
            float(found["step_time_s"]),
            _integer(found, "blocks"),
            _number(found, "ci_low"),
            _number(found, "ci_high"),
            tuple(float(x) for x in found.get("steps", ())),
            tuple(float(x) for x in found.get("growth", ())),
            _number(found, "growth_ci_low"),
            _number(found, "growth_ci_high"),
        )

    @property
    def ci(self) -> tuple[float, float] | None:
        return None if self.ci_low is None or self.ci_high is None else (self.ci_low, self.ci_high)

    def to_metrics(self) -> dict[str, Any]:
        """What `from_metrics` reads: the runner's record of the probe."""
        return {PROBE: asdict(self)}


ROUNDS = "rounds"
OPTIMIZE_POLICY = "optimize"  # Rounds.policy of a variant whose processes optimize's search ran


@dataclass(frozen=True)
class Rounds:
    """How a configuration's processes were planned and run (`rounds`, engine/rounds).

    `passes[i]` is the sweep's pass in which process i ran: two configurations of one sweep
    whose processes share a pass ran side by side, and compare pairs them. A process that
    failed after others had measured leaves the rest standing and is listed in `failed`.
    """

    passes: tuple[int, ...] = ()
    planned: int = 0  # the processes the configuration gets in all, as planned so far
    wanted: int | None = None  # adaptive: the processes the first ones' spread asked for
    complete: bool = False  # every planned process has run (else --resume goes on)
    reason: str = ""  # why `planned` is what it is
    failed: tuple[str, ...] = ()  # "process 3: timeout: ...": processes that gave no samples
    policy: str = ""  # "3 fixed", "adaptive, 3 to 8"

    @classmethod
    def from_metrics(cls, metrics: Mapping[str, Any]) -> Rounds | None:
        found = _group(metrics, ROUNDS)
        if found is None:
            return None
        return cls(
            passes=tuple(int(x) for x in found.get("passes", ())),
            planned=int(found.get("planned", 0)),
            wanted=_integer(found, "wanted"),
            complete=bool(found.get("complete", False)),
            reason=str(found.get("reason", "")),
            failed=tuple(str(x) for x in found.get("failed", ())),
            policy=str(found.get("policy", "")),
        )

    def to_metrics(self) -> dict[str, Any]:
        """What `from_metrics` reads."""
        return {ROUNDS: asdict(self)}


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


@dataclass(frozen=True)
class Latency:
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

    @classmethod
    def from_metrics(cls, metrics: Mapping[str, Any]) -> Latency | None:
        found = _group(metrics, LATENCY)
        if found is None:
            return None
        return cls(
            batch_size=int(found["batch_size"]),
            samples=int(found["samples"]),
            p50_s=float(found["p50_s"]),
            p90_s=float(found["p90_s"]),
            p99_s=_number(found, "p99_s"),
            steps_s=tuple(float(s) for s in found.get("steps_s", ())),
            source=str(found.get("source", "")),
        )

    def to_metrics(self) -> dict[str, Any]:
        """What `from_metrics` reads: the runner's record of the latency."""
        return {LATENCY: {**asdict(self), "steps_s": list(self.steps_s)}}


# A position is decisive when fp32's top token leads the second by more than this many times
# the variant's logit error there (the root-mean-square over the vocabulary). Two logits off
# by independent errors of that size move their gap by sqrt(2) times it, so rounding noise
# flips such a lead with a chance under 0.3% (a normal tail beyond 4 / sqrt(2) = 2.8 of its
# deviations); a flip there is an error of another kind. Random weights give near-uniform
# logits whose leads are mostly smaller: bf16 on llama-1b's (logits off by 0.19 of their
# spread) leaves 2 of 128 positions decisive, fp16 (0.013) 104.
DECISIVE_MARGIN = 4.0


@dataclass(frozen=True)
class Drift:
    """A configuration's outputs against PyTorch fp32's on the same weights and inputs (`drift`).

    Errors are relative to the reference's largest magnitude; `error` says why there is no
    figure, `not_finite` that the outputs held NaN or infinity (then the errors are None).
    """

    reference: str = ""
    max_rel_error: float | None = None
    max_abs_error: float | None = None
    top1_agreement: float | None = None  # share of samples whose top-1 class agrees
    top1_unavailable: str = ""
    samples: int | None = None
    not_finite: bool = False
    error: str = ""
    # Mode generate: top1_agreement is over the generated token ids (samples: batch x new
    # tokens), the errors are the first token's logits'.
    token_ids: bool = False
    first_token_agreement: float | None = None  # the first token's top-1, over the batch
    agreeing_prefix: float | None = None  # a sequence's leading tokens equal to fp32's, median
    # Since issue 27 (analysis/drift.logit_drift; None in older records): the logits at each
    # step against fp32's, their rms error over the vocabulary as a share of fp32's spread
    # (standard deviation), at the worst and the median compared position; and the tokens at
    # the decisive positions, where fp32's top token leads the second by more than
    # `decisive_margin` times that error.
    spread_error: float | None = None
    spread_error_median: float | None = None
    positions: int | None = None  # batch x new tokens
    compared_positions: int | None = None  # those whose logits were compared
    decisive_positions: int | None = None
    decisive_agreement: float | None = None  # share of the decisive positions agreeing
    decisive_margin: float | None = None
    undetermined: str = ""  # why the logits could not be compared (none had a spread)

    @classmethod
    def from_metrics(cls, metrics: Mapping[str, Any]) -> Drift | None:
        found = _group(metrics, DRIFT)
        return None if found is None else cls.from_record(found)

    @classmethod
    def from_record(cls, found: Mapping[str, Any]) -> Drift:
        samples = found.get("samples")
        return cls(
            reference=str(found.get("reference", "")),
            max_rel_error=_number(found, "max_rel_error"),
            max_abs_error=_number(found, "max_abs_error"),
            top1_agreement=_number(found, "top1_agreement"),
            top1_unavailable=str(found.get("top1_unavailable", "")),
            samples=None if samples is None else int(samples),
            not_finite=bool(found.get("not_finite", False)),
            error=str(found.get("error", "")),
            token_ids=bool(found.get("token_ids", False)),
            first_token_agreement=_number(found, "first_token_agreement"),
            agreeing_prefix=_number(found, "agreeing_prefix"),
            spread_error=_number(found, "spread_error"),
            spread_error_median=_number(found, "spread_error_median"),
            positions=_integer(found, "positions"),
            compared_positions=_integer(found, "compared_positions"),
            decisive_positions=_integer(found, "decisive_positions"),
            decisive_agreement=_number(found, "decisive_agreement"),
            decisive_margin=_number(found, "decisive_margin"),
            undetermined=str(found.get("undetermined", "")),
        )

    @property
    def by_spread(self) -> bool:
        """Whether a generation's logits were compared with their spread (a record since
        issue 27): then the tolerance holds those figures, not the first token's."""
        return self.token_ids and (self.spread_error is not None or bool(self.undetermined))


@dataclass(frozen=True)
class Power:
    """Energy over the timed samples (`power` and the figures beside it)."""

    average_watts: float
    joules: float  # over the meter's whole interval
    seconds: float  # the meter's interval
    source: str  # which counter read it, e.g. NVML or RAPL
    joules_per_sample: float  # charged by timed seconds, not the meter's interval
    samples_per_s_per_watt: float
    warning: str = ""  # `power_warning`: why the figure is rough

    @classmethod
    def from_metrics(cls, metrics: Mapping[str, Any]) -> Power | None:
        found = _group(metrics, POWER)
        if found is None:
            return None
        return cls(
            average_watts=float(found["average_watts"]),
            joules=float(found["joules"]),
            seconds=float(found["seconds"]),
            source=str(found["source"]),
            joules_per_sample=float(metrics[JOULES_PER_SAMPLE]),
            samples_per_s_per_watt=float(metrics[SAMPLES_PER_S_PER_WATT]),
            warning=str(metrics.get(POWER_WARNING, "")),
        )


@dataclass(frozen=True)
class MachineState:
    """What else the machine was doing while the timed samples ran (`machine_state`).

    CPU figures are cores on average over `seconds` (1.0: one core busy the whole time); the GPU
    figures are the least and most seen in NVML readings at both ends and every 0.2 s between.
    None, or an empty tuple, where not read; the `*_unavailable` texts say why.
    """

    seconds: float  # the interval the host was read over
    cores: int | None = None  # the host's logical CPUs
    other_cpu_cores: float | None = None  # CPU time of processes other than ours (and children)
    steal_cores: float | None = None  # time the hypervisor ran other guests on our CPUs
    # how far the two CPU figures can be off from the counters' ticks alone (10 ms each)
    cpu_resolution_cores: float | None = None
    load_average_1m: float | None = None  # at the end
    host_unavailable: str = ""  # what of the host could not be read, and why
    gpu_readings: int = 0  # NVML readings taken
    sm_clock_min_mhz: int | None = None
    sm_clock_max_mhz: int | None = None
    memory_clock_min_mhz: int | None = None
    memory_clock_max_mhz: int | None = None
    temperature_max_c: int | None = None
    throttle_reasons: tuple[str, ...] = ()  # every reason seen, idle and app-clock bits left out
    other_gpu_processes: int = 0  # the most processes other than ours seen on the GPU at once
    other_gpu_pids: tuple[int, ...] = ()  # their ids, where NVML's ids are this PID namespace's
    gpu_unavailable: str = ""  # what of the GPU could not be read, and why
    # the busiest other processes on the CPU, e.g. "pid 812 python3: 0.98 cores", marked
    # "ours" (a live child, which getrusage does not count until it ends) or "our ancestor"
    # with the command where it runs our interpreter (devices/processes)
    other_cpu_busiest: tuple[str, ...] = ()

    @classmethod
    def from_metrics(
        cls, metrics: Mapping[str, Any], key: str = MACHINE_STATE
    ) -> MachineState | None:
        found = _group(metrics, key)
        if found is None:
            return None
        names = {f.name for f in fields(cls)}
        kept = {k: v for k, v in found.items() if k in names}  # a later writer's extra keys
        for name in ("throttle_reasons", "other_gpu_pids", "other_cpu_busiest"):
            kept[name] = tuple(kept.get(name, ()))
        return cls(**kept)

    def to_metrics(self, key: str = MACHINE_STATE) -> dict[str, Any]:
        """What `from_metrics` reads."""
        return {key: asdict(self)}


@dataclass(frozen=True)
class Flops:
    """FLOPs counted by torch.utils.flop_counter, and model FLOPs utilization."""

    per_sample: float | None = None  # FLOP per sample
    achieved: float | None = None  # FLOP/s
    peak: float | None = None  # the device's peak FLOP/s for the precision
    peak_source: str = ""  # where the peak comes from (datasheet, calibration)
    mfu: float | None = None  # achieved / peak, a share

    @classmethod
    def from_metrics(cls, metrics: Mapping[str, Any]) -> Flops:
        return cls(
            per_sample=_number(metrics, FLOPS_PER_SAMPLE),
            achieved=_number(metrics, ACHIEVED_FLOPS),
            peak=_number(metrics, PEAK_FLOPS),
            peak_source=str(metrics.get(PEAK_SOURCE, "")),
            mfu=_number(metrics, MFU),
        )


@dataclass(frozen=True)
class Bottleneck:
    """The bottleneck verdict (`verdict`): launch-, compute- or memory-bound, or undetermined."""

    kind: str
    explanation: str

    @classmethod
    def from_metrics(cls, metrics: Mapping[str, Any]) -> Bottleneck | None:
        found = _group(metrics, VERDICT)
        if found is None:
            return None
        return cls(str(found.get("kind", "")), str(found.get("explanation", "")))


@dataclass(frozen=True)
class RankFigures:
    """One data-parallel process's own figures."""

    rank: int
    device: str
    it_per_s: float  # median
    samples_per_s: float | None = None
    peak_memory: int | None = None  # bytes


@dataclass(frozen=True)
class Parallel:
    """A data-parallel run (`ranks`, `world_size`) and its scaling against one process."""

    world_size: int
    ranks: tuple[RankFigures, ...]
    scaling_efficiency: float | None = None  # aggregate / (N x one process), a share
    single_process_samples_per_s: float | None = None
    scaling_unavailable: str = ""  # why there is no scaling efficiency

    @classmethod
    def from_metrics(cls, metrics: Mapping[str, Any]) -> Parallel | None:
        if RANKS not in metrics:
            return None
        ranks = tuple(
            RankFigures(
                rank=int(x["rank"]),
                device=str(x["device"]),
                it_per_s=float(x["it_per_s"]),
                samples_per_s=_number(x, "samples_per_s"),
                peak_memory=x.get("peak_memory"),
            )
            for x in metrics[RANKS]
        )
        return cls(
            world_size=int(metrics[WORLD_SIZE]),
            ranks=ranks,
            scaling_efficiency=_number(metrics, SCALING_EFFICIENCY),
            single_process_samples_per_s=_number(metrics, SINGLE_PROCESS_SAMPLES_PER_S),
            scaling_unavailable=str(metrics.get(SCALING_UNAVAILABLE, "")),
        )


@dataclass(frozen=True)
class MaxBatchSearch:
    """The search for the largest batch that fits in the device's memory."""

    largest: int  # `max_batch`: 0 when not even a batch of 1 fitted
    probes: tuple[tuple[int, str], ...]  # (batch size, status) in the order tried
    limit_reached: bool = False  # the search stopped at its own limit, not the memory's
    stopped_by: str = ""  # an error other than memory that ended the search
    device_memory: int | None = None  # bytes

    @classmethod
    def from_metrics(cls, metrics: Mapping[str, Any]) -> MaxBatchSearch | None:
        if MAX_BATCH not in metrics:
            return None
        memory = metrics.get(DEVICE_MEMORY)
        return cls(
            largest=int(metrics[MAX_BATCH]),
            probes=tuple((int(b), str(s)) for b, s in metrics.get(MAX_BATCH_PROBES, ())),
            limit_reached=bool(metrics.get(MAX_BATCH_LIMIT_REACHED, False)),
            stopped_by=str(metrics.get(MAX_BATCH_STOPPED_BY) or ""),
            device_memory=None if memory is None else int(memory),
        )


@dataclass(frozen=True)
class OnnxRuntimeFacts:
    """How an ONNX Runtime result was made and timed (`onnxruntime`)."""

    version: str = ""
    exporter: str = ""
    providers: tuple[str, ...] = ()  # the provider asked for, then its fallbacks
    timing: str = ""  # what the timed call includes (host-device copies...)
    caveat: str = ""

    @classmethod
    def from_metrics(cls, metrics: Mapping[str, Any]) -> OnnxRuntimeFacts | None:
        found = _group(metrics, ONNXRUNTIME)
        if found is None:
            return None
        return cls(
            version=str(found.get("onnxruntime", "")),
            exporter=str(found.get("exporter", "")),
            providers=tuple(found.get("providers", ())),
            timing=str(found.get("timing", "")),
            caveat=str(found.get("caveat") or ""),
        )


@dataclass(frozen=True)
class CoreMLFacts:
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

    @classmethod
    def from_metrics(cls, metrics: Mapping[str, Any]) -> CoreMLFacts | None:
        found = _group(metrics, COREML)
        if found is None:
            return None
        per_unit = found.get("per_unit")
        operators = found.get("operators")
        return cls(
            version=str(found.get("version", "")),
            compute_units=str(found.get("compute_units", "")),
            compute_precision=str(found.get("compute_precision", "")),
            compiled=str(found.get("compiled", "")),
            operators=None if operators is None else int(operators),
            per_unit=None if per_unit is None else {str(k): int(v) for k, v in per_unit.items()},
            plan_unavailable=str(found.get("plan_unavailable") or ""),
            timing=str(found.get("timing", "")),
        )


@dataclass(frozen=True)
class OptimizeTag:
    """Marks a result as one variant of an `accelbench optimize` ladder (`optimize`)."""

    variant: str  # the rung's name, e.g. "fp32 eager"
    tolerance: Mapping[str, float] | None = None  # the ladder's Tolerance fields, as stored

    @classmethod
    def from_metrics(cls, metrics: Mapping[str, Any]) -> OptimizeTag | None:
        found = _group(metrics, OPTIMIZE)
        if found is None:
            return None
        return cls(str(found["variant"]), found.get("tolerance") or None)

    def to_metrics(self) -> dict[str, Any]:
        tolerance = None if self.tolerance is None else dict(self.tolerance)
        return {OPTIMIZE: {"variant": self.variant, "tolerance": tolerance}}


@dataclass(frozen=True)
class Overhead:
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
    setup_s: float | None = None
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
    def from_metrics(cls, metrics: Mapping[str, Any]) -> Overhead | None:
        found = _group(metrics, OVERHEAD)
        if found is None:
            return None
        named = {f.name: _number(found, f.name) for f in fields(cls) if f.name != SETUP_S}
        return cls(**named, setup_s=_number(metrics, SETUP_S))

    @classmethod
    def add(cls, metrics: Mapping[str, Any], **seconds: float) -> dict[str, Any]:
        """A copy of `metrics` with `seconds` added to its overhead group (each writer adds the
        phases it sees). TypeError for a name that is not a field, so a typo cannot pass."""
        names = {f.name for f in fields(cls)} - {SETUP_S}  # setup_s stays where it always was
        unknown = sorted(set(seconds) - names)
        if unknown:
            raise TypeError(f"not overhead fields: {unknown}; the fields are {sorted(names)}")
        return {**metrics, OVERHEAD: {**(_group(metrics, OVERHEAD) or {}), **seconds}}


@dataclass(frozen=True)
class Pruning:
    """What pruning removed (`pruning`)."""

    method: str  # "KIND:AMOUNT"
    params_before: int
    params_after: int
    zero_fraction: float  # share of zeros in the prunable weights
    flops_per_sample: float | None = None  # FLOP of the pruned model (channel pruning only)

    @classmethod
    def from_metrics(cls, metrics: Mapping[str, Any]) -> Pruning | None:
        found = _group(metrics, PRUNING)
        if found is None:
            return None
        return cls(
            method=str(found["method"]),
            params_before=int(found["params_before"]),
            params_after=int(found["params_after"]),
            zero_fraction=float(found["zero_fraction"]),
            flops_per_sample=_number(found, FLOPS_PER_SAMPLE),
        )


@dataclass(frozen=True)
class Verification:
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
    accuracy_ci_points: tuple[float, float] | None = None
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

    @classmethod
    def from_metrics(cls, metrics: Mapping[str, Any]) -> Verification | None:
        found = metrics.get(VERIFY)
        if not isinstance(found, Mapping):
            return None
        curve = found.get("loss_curve")
        epochs, seed = found.get("epochs"), found.get("seed")
        return cls(
            verdict=str(found.get("verdict", "")),
            reasons=tuple(found.get("reasons", ())),
            inconclusive_because=str(found.get("inconclusive_because") or ""),
            loss_curve=None if curve is None else tuple(_optional_float(x) for x in curve),
            accuracy=_number(found, "accuracy"),
            is_baseline=bool(found.get("is_baseline", False)),
            accuracy_diff_points=_number(found, "accuracy_diff_points"),
            accuracy_ci_points=_interval_points(found.get("paired")),
            accuracy_note=str(found.get("accuracy_note") or ""),
            held_out_correct=str(found.get("held_out_correct") or ""),
            max_loss_deviation=_number(found, "max_loss_deviation"),
            final_loss_deviation=_number(found, "final_loss_deviation"),
            data=str(found.get("data", "")),
            optimizer=str(found.get("optimizer", "")),
            epochs=None if epochs is None else int(epochs),
            lr=_number(found, "lr"),
            tolerance_points=float(found.get("tolerance_points", 0.0)),
            loss_tolerance=float(found.get("loss_tolerance", 0.0)),
            seed=None if seed is None else int(seed),
        )


def _interval_points(paired: Any) -> tuple[float, float] | None:
    """A verify record's paired interval, in points; None before verify recorded one."""
    if not isinstance(paired, Mapping):
        return None
    return float(paired["ci95_low_points"]), float(paired["ci95_high_points"])


def _optional_float(value: Any) -> float | None:
    return None if value is None else float(value)


# --- language-model generation (mode "generate") --------------------------------------------
GENERATION = "generation"


@dataclass(frozen=True)
class Generation:
    """A generate result's phases (`generation`), each timed apart and synchronized at its
    boundaries: the prompt's prefill (its forward and the first token), then the new_tokens - 1
    decode steps, one token per sequence each. Seconds are per timed sample (one generation).

    One definition throughout, as LLM serving benchmarks use it: the time to first token (TTFT)
    is a generation's prefill; its time per output token (TPOT) is its decode time over its
    decode steps (the first token excluded); decode tokens/s is the batch over the median
    TPOT. The inter-token latency (ITL) is one decode step's own time, every step pooled: its
    tail shows stalls a TPOT averages away.

    backends/generate writes the timings and sizes; analysis/bandwidth adds the figures that
    need the device's peaks. Bytes per decode step: the weights at their dtype plus the KV cache
    at the length the step attends over, averaged over the decode steps.
    """

    prompt_length: int
    new_tokens: int
    batch_size: int
    generated_tokens: int  # tokens per sequence the last generation produced, counted
    prefill_s: tuple[float, ...]  # per timed sample: time to the first token
    decode_s: tuple[float, ...]  # per timed sample: its decode steps together
    token_p50_s: float | None = None  # ITL: one decode step, median over every timed step
    token_p90_s: float | None = None
    decode_tokens_per_s: float | None = None  # batch / median TPOT
    weight_bytes: int | None = None
    kv_bytes_per_token: float | None = None  # the KV cache one decode step reads, on average
    kv_read_positions: float | None = None  # the positions it reads, on average
    static_cache: bool = False  # a static cache: every step reads all its positions
    token_s: tuple[tuple[float, ...], ...] = ()  # per timed sample: each decode step's seconds
    graph_breaks: int | None = None  # a compiled decode step: torch.compile's graph breaks
    cudagraph_skips: int | None = None  # and the CUDA graphs it could not capture
    kv_cache_bytes: int | None = None  # the KV cache at the end of the generation
    achieved_bandwidth: float | None = None  # bytes per decode step / median TPOT, B/s
    peak_bandwidth: float | None = None  # B/s
    bandwidth_source: str = ""
    bandwidth_share: float | None = None  # achieved / peak
    prefill_flops: float | None = None  # FLOP of one prefill over the batch
    prefill_achieved_flops: float | None = None  # FLOP/s
    peak_flops: float | None = None  # FLOP/s for the precision
    prefill_mfu: float | None = None
    # the least time a decode step could take at the device's peaks (analysis/bandwidth)
    decode_memory_floor_s: float | None = None
    decode_compute_floor_s: float | None = None
    decode_floor_share: float | None = None  # the larger floor over the median step

    @property
    def decode_steps(self) -> int:
        return self.new_tokens - 1  # the first token comes from the prefill

    @staticmethod
    def step_percentiles(steps: Sequence[float]) -> tuple[float, float]:
        """The p50 and p90 of decode steps' seconds, as every writer takes them."""
        ordered = list(steps)
        if len(ordered) < 2:
            return ordered[0], ordered[0]
        p90 = statistics.quantiles(ordered, n=10, method="inclusive")[-1]
        return statistics.median(ordered), p90

    @property
    def prefill_median_s(self) -> float:
        return statistics.median(self.prefill_s)

    @property
    def tpot_s(self) -> tuple[float, ...]:
        """Each timed generation's time per output token, the first token excluded."""
        steps = self.decode_steps
        return tuple(d / steps for d in self.decode_s) if steps else ()

    @property
    def tpot_median_s(self) -> float | None:
        return statistics.median(self.tpot_s) if self.tpot_s else None

    @property
    def itl_s(self) -> tuple[float, ...]:
        """Every timed decode step's seconds, pooled (the inter-token latency)."""
        return tuple(s for sample in self.token_s for s in sample)

    @property
    def decode_median_s(self) -> float | None:
        return statistics.median(self.decode_s) if self.decode_steps else None

    @property
    def bytes_per_token(self) -> float | None:
        if self.weight_bytes is None or self.kv_bytes_per_token is None:
            return None
        return self.weight_bytes + self.kv_bytes_per_token

    @classmethod
    def from_metrics(cls, metrics: Mapping[str, Any]) -> Generation | None:
        found = _group(metrics, GENERATION)
        if found is None:
            return None
        names = {f.name for f in fields(cls)}
        values = {k: v for k, v in found.items() if k in names}
        for name in ("prefill_s", "decode_s"):
            values[name] = tuple(float(x) for x in found[name])
        values["token_s"] = tuple(tuple(float(x) for x in s) for s in found.get("token_s", ()))
        return cls(**values)


# --- end of language-model generation ------------------------------------------------------


@dataclass(frozen=True)
class Metrics:
    """A result's metrics read through typed accessors: `Metrics(result.metrics).power`.

    Each accessor returns its group's value, or None (an empty text, for the reasons) when the
    result has none.
    """

    raw: Mapping[str, Any]

    @property
    def setup_s(self) -> float | None:
        return _number(self.raw, SETUP_S)

    @property
    def probe(self) -> Probe | None:
        return Probe.from_metrics(self.raw)

    @property
    def probe_error(self) -> str:
        return str(self.raw.get(PROBE_ERROR, ""))

    @property
    def latency(self) -> Latency | None:
        return Latency.from_metrics(self.raw)

    @property
    def latency_error(self) -> str:
        return str(self.raw.get(LATENCY_ERROR, ""))

    @property
    def drift(self) -> Drift | None:
        return Drift.from_metrics(self.raw)

    @property
    def power(self) -> Power | None:
        return Power.from_metrics(self.raw)

    @property
    def power_unavailable(self) -> str:
        return str(self.raw.get(POWER_UNAVAILABLE, ""))

    @property
    def flops(self) -> Flops:
        return Flops.from_metrics(self.raw)

    @property
    def bottleneck(self) -> Bottleneck | None:
        return Bottleneck.from_metrics(self.raw)

    @property
    def memory_tensors_only(self) -> bool:
        return bool(self.raw.get(MEMORY_TENSORS_ONLY, False))

    @property
    def pruning(self) -> Pruning | None:
        return Pruning.from_metrics(self.raw)

    @property
    def parallel(self) -> Parallel | None:
        return Parallel.from_metrics(self.raw)

    @property
    def max_batch(self) -> MaxBatchSearch | None:
        return MaxBatchSearch.from_metrics(self.raw)

    @property
    def explanation(self) -> Explanation | None:
        found = _group(self.raw, EXPLAIN)
        return None if found is None else Explanation.from_record(found)

    @property
    def explain_error(self) -> str:
        return str(self.raw.get(EXPLAIN_ERROR, ""))

    @property
    def onnxruntime(self) -> OnnxRuntimeFacts | None:
        return OnnxRuntimeFacts.from_metrics(self.raw)

    @property
    def cpu_fallback_ops(self) -> tuple[str, ...]:
        return tuple(str(name) for name in self.raw.get(CPU_FALLBACK_OPS) or ())

    @property
    def coreml(self) -> CoreMLFacts | None:
        return CoreMLFacts.from_metrics(self.raw)

    @property
    def load_s(self) -> float | None:
        return _number(self.raw, LOAD_S)

    @property
    def optimize(self) -> OptimizeTag | None:
        return OptimizeTag.from_metrics(self.raw)

    @property
    def overhead(self) -> Overhead | None:
        return Overhead.from_metrics(self.raw)

    @property
    def verification(self) -> Verification | None:
        return Verification.from_metrics(self.raw)

    @property
    def machine_state(self) -> MachineState | None:
        return MachineState.from_metrics(self.raw)

    @property
    def probe_machine_state(self) -> MachineState | None:
        return MachineState.from_metrics(self.raw, PROBE_MACHINE_STATE)

    @property
    def generation(self) -> Generation | None:
        return Generation.from_metrics(self.raw)

    @property
    def rounds(self) -> Rounds | None:
        return Rounds.from_metrics(self.raw)

    @property
    def model_output(self) -> str:
        return str(self.raw.get(MODEL_OUTPUT, ""))

    @property
    def parameters(self) -> int | None:
        found = self.raw.get(PARAMETERS)
        return None if found is None else int(found)


# What each key holds, for `check_metrics`: one JSON type, or an object (a group). None passes
# everywhere: writers store it for "no figure".
_NUMBER = (int, float)
_KEY_TYPES: dict[str, tuple[type, ...]] = {
    **dict.fromkeys(
        (SETUP_S, JOULES_PER_SAMPLE, SAMPLES_PER_S_PER_WATT, FLOPS_PER_SAMPLE, ACHIEVED_FLOPS),
        _NUMBER,
    ),
    LOAD_S: _NUMBER,
    **dict.fromkeys((PREFILL_FLOPS_PER_SEQUENCE, DECODE_FLOPS_PER_SEQUENCE), _NUMBER),
    CHANNELS_LAST_APPLIES: (bool,),
    **dict.fromkeys((PEAK_FLOPS, MFU, SCALING_EFFICIENCY, SINGLE_PROCESS_SAMPLES_PER_S), _NUMBER),
    **dict.fromkeys((MAX_BATCH, DEVICE_MEMORY, WORLD_SIZE, PARAMETERS), (int,)),
    **dict.fromkeys(
        (PROBE_ERROR, POWER_WARNING, POWER_UNAVAILABLE, PEAK_SOURCE, SCALING_UNAVAILABLE), (str,)
    ),
    LATENCY_ERROR: (str,),
    MODEL_OUTPUT: (str,),
    MAX_BATCH_STOPPED_BY: (str,),
    **dict.fromkeys((MEMORY_TENSORS_ONLY, MAX_BATCH_LIMIT_REACHED), (bool,)),
    **dict.fromkeys((RANKS, MAX_BATCH_PROBES, CPU_FALLBACK_OPS, LEFT_RUNNING), (list,)),
}
# The groups stored under one key whose own keys are their view's field names.
_GROUPS: dict[str, type] = {
    PROBE: Probe,
    LATENCY: Latency,
    DRIFT: Drift,
    POWER: Power,
    VERDICT: Bottleneck,
    PRUNING: Pruning,
    ONNXRUNTIME: OnnxRuntimeFacts,
    COREML: CoreMLFacts,
    OPTIMIZE: OptimizeTag,
    VERIFY: Verification,
    OVERHEAD: Overhead,
    MACHINE_STATE: MachineState,
    PROBE_MACHINE_STATE: MachineState,
    GENERATION: Generation,
    ROUNDS: Rounds,
}
_VIEWS = [name for name, member in vars(Metrics).items() if isinstance(member, property)]
_VIEW_KEYS = {"bottleneck": VERDICT, "parallel": RANKS, "verification": VERIFY}
_DEEPEST = 16  # no writer nests deeper; a deeper file would overflow the stack of JSON encoding


def check_metrics(metrics: Mapping[str, Any]) -> None:
    """ValueError naming the first key of `metrics` (as `metrics.KEY`) that a typed view, and
    so a renderer, cannot take: a wrong JSON type, a group missing what its view needs, a value
    of the wrong type inside a group, or nesting deeper than any writer makes. Keys no view
    reads are kept as they are."""
    _check_depth(metrics, "metrics", 0)
    for key, value in metrics.items():
        kinds = (dict,) if key in _GROUPS else _KEY_TYPES.get(key)
        if value is None or kinds is None:
            continue
        if isinstance(value, bool) is not (bool in kinds) or not isinstance(value, kinds):
            raise ValueError(f"metrics.{key} has the wrong type ({type(value).__name__})")
        if isinstance(value, dict):  # a group: only group keys get past the check above
            _check_group(key, value)
    for view in _VIEWS:
        key = _VIEW_KEYS.get(view, view)
        try:
            built = getattr(Metrics(metrics), view)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ValueError(
                f"metrics.{key} cannot be read ({type(exc).__name__}: {exc})"
            ) from None
        # a group's values were each checked above; a view made of other keys is checked whole
        # (every stored row is checked when read: this is most of a listing's time)
        if key not in _GROUPS and is_dataclass(built) and not _conforms(built, type(built)):
            raise ValueError(f"metrics.{key} holds a value of the wrong type")


def _check_group(key: str, group: Mapping[str, Any]) -> None:
    """Each of the group's values that its view reads by the field's name is of its type."""
    hints = _hints(_GROUPS[key])
    for name, value in group.items():
        if name in hints and value is not None and not _conforms(value, hints[name]):
            raise ValueError(f"metrics.{key}.{name} has the wrong type ({type(value).__name__})")


@functools.cache
def _hints(kind: type) -> dict[str, Any]:
    """A view's field types, resolved once: every stored row is checked against them."""
    return get_type_hints(kind)


def _check_depth(value: Any, where: str, depth: int) -> None:
    if depth > _DEEPEST:
        raise ValueError(f"{where} nests deeper than {_DEEPEST} levels")
    children = value.values() if isinstance(value, Mapping) else value
    if isinstance(value, (Mapping, list)):
        for child in children:
            _check_depth(child, where, depth + 1)


def _conforms(value: Any, hint: Any) -> bool:
    """Whether `value` (JSON as stored, or a view's field) is of the annotated type: a list
    passes for a tuple and an int for a float, a bool never for a number."""
    origin, args = get_origin(hint), get_args(hint)
    if hint is Any:
        return True
    if origin in (Union, UnionType):
        return any(_conforms(value, arm) for arm in args)
    if origin is tuple:
        if not isinstance(value, (tuple, list)):
            return False
        arms = args[:1] * len(value) if args[-1:] == (Ellipsis,) else args
        return len(arms) == len(value) and all(map(_conforms, value, arms))
    if origin is Mapping:
        key, item = args
        return isinstance(value, Mapping) and all(
            _conforms(k, key) and _conforms(v, item) for k, v in value.items()
        )
    if hint in (int, float) and isinstance(value, bool):
        return False
    if hint is float:
        return isinstance(value, (int, float))
    if isinstance(hint, type) and is_dataclass(hint):
        hints = _hints(hint)
        return isinstance(value, hint) and all(
            _conforms(getattr(value, f.name), hints[f.name]) for f in fields(hint)
        )
    return isinstance(value, hint)
