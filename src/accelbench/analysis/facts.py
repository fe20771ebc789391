"""The facts the analysis reads, as typed values stored in `Result.metrics` (core/facts).

They are here, torch-free, because the analysis layer reads them and imports point down: the
verdict's probe and the processes' plan (written by engine/probe and engine/rounds), a
generation's phases (backends/generate, with analysis/bandwidth's figures), the drift against
fp32 (analysis/drift), FLOPs and MFU (analysis/metrics), what pruning removed (levers/prune),
verify's record (workflows/verify; analysis/compare leaves such results out) and what the
model's code left running (engine/worker; analysis/trust warns of it).

ONNX Runtime's and Core ML's facts (backends/onnxruntime, backends/coreml) are here too, though
no analysis reads them: the backends' package imports torch when imported, and the renderers of
stored results must not.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..core.facts import Fact, fact, scalar, stored
from ..core.result import Result, RunSpec

PROBE = "probe"
DRIFT = "drift"
FLOPS_PER_SAMPLE = "flops_per_sample"
ACHIEVED_FLOPS = "achieved_flops"
PEAK_FLOPS = "peak_flops"
PEAK_SOURCE = "peak_source"
MFU = "mfu"
MEMORY_TENSORS_ONLY = "memory_tensors_only"
PRUNING = "pruning"
# What the first process learns of the model itself, so the parent never calls the user's code
# (issue 25): whether its forward takes channels_last inputs, and a generation's forward FLOPs.
CHANNELS_LAST_APPLIES = "channels_last_applies"
PREFILL_FLOPS_PER_SEQUENCE = "prefill_flops_per_sequence"
DECODE_FLOPS_PER_SEQUENCE = "decode_flops_per_sequence"


@fact(PROBE)
@dataclass(frozen=True)
class Probe(Fact):
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
    # each process's median step at the configuration's own batch over those same pairs: the
    # side of the ratio that `steps` is not. The main samples' median is no stand-in, as they
    # were timed apart (with --blocks 3, one step alone each: 4x the paired step on a CPU).
    # Empty in results stored before it was recorded.
    paired_steps: tuple[float, ...] = ()

    @property
    def ci(self) -> tuple[float, float] | None:
        return None if self.ci_low is None or self.ci_high is None else (self.ci_low, self.ci_high)


ROUNDS = "rounds"
OPTIMIZE_POLICY = "optimize"  # Rounds.policy of a variant whose processes optimize's search ran


@fact(ROUNDS)
@dataclass(frozen=True)
class Rounds(Fact):
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


def partial(result: Result) -> tuple[int, int] | None:
    """(measured, planned): the processes of a result measured in fewer than its plan gives it
    (its sweep was interrupted, or is still running; `--resume` completes it); None for any
    other result. Every output marks such a row, and compare leaves it out of significance."""
    rounds, m = result.facts.get(Rounds), result.measurement
    if rounds is None or m is None or rounds.complete or m.processes >= rounds.planned:
        return None
    return m.processes, rounds.planned


def partial_mark(result: Result) -> str:
    """What a table adds to a partial result's figure (" (partial 1/2)"), else ""."""
    found = partial(result)
    return f" (partial {found[0]}/{found[1]})" if found else ""


# A position is decisive when fp32's top token leads the second by more than this many times
# the variant's logit error there (the root-mean-square over the vocabulary). Two logits off
# by independent errors of that size move their gap by sqrt(2) times it, so rounding noise
# flips such a lead with a chance under 0.3% (a normal tail beyond 4 / sqrt(2) = 2.8 of its
# deviations); a flip there is an error of another kind. Random weights give near-uniform
# logits whose leads are mostly smaller: bf16 on llama-1b's (logits off by 0.19 of their
# spread) leaves 2 of 128 positions decisive, fp16 (0.013) 104.
DECISIVE_MARGIN = 4.0


@fact(DRIFT)
@dataclass(frozen=True)
class Drift(Fact):
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

    @property
    def by_spread(self) -> bool:
        """Whether a generation's logits were compared with their spread (a record since
        issue 27): then the tolerance holds those figures, not the first token's."""
        return self.token_ids and (self.spread_error is not None or bool(self.undetermined))


@fact(FLOPS_PER_SAMPLE, flat=True)
@dataclass(frozen=True)
class Flops(Fact):
    """FLOPs counted by torch.utils.flop_counter, and model FLOPs utilization."""

    per_sample: float | None = stored(FLOPS_PER_SAMPLE, default=None)  # FLOP per sample
    achieved: float | None = stored(ACHIEVED_FLOPS, default=None)  # FLOP/s
    peak: float | None = stored(PEAK_FLOPS, default=None)  # the peak FLOP/s for the precision
    peak_source: str = stored(PEAK_SOURCE, default="")  # where the peak comes from
    mfu: float | None = stored(MFU, default=None)  # achieved / peak, a share


@fact(PRUNING)
@dataclass(frozen=True)
class Pruning(Fact):
    """What pruning removed (`pruning`)."""

    method: str  # "KIND:AMOUNT"
    params_before: int
    params_after: int
    zero_fraction: float  # share of zeros in the prunable weights
    flops_per_sample: float | None = None  # FLOP of the pruned model (channel pruning only)


# --- language-model generation (mode "generate") --------------------------------------------
GENERATION = "generation"


def generation_lengths(spec: RunSpec) -> tuple[int, int]:
    """A generate configuration's prompt length and new tokens: its mode's arguments, read by
    name here because the mode that declares them (modes/generate) sits above the layers that
    need them (its lever, its backend). ValueError where one is missing."""
    found = (spec.mode_arg("prompt_length"), spec.mode_arg("new_tokens"))
    if not all(isinstance(n, int) and not isinstance(n, bool) for n in found):
        raise ValueError(f"{spec.mode} needs a prompt length and new tokens, not {found}")
    return found  # type: ignore[return-value]


@fact(GENERATION)
@dataclass(frozen=True)
class Generation(Fact):
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


TENSORS_ONLY = scalar(MEMORY_TENSORS_ONLY, bool, False)
CHANNELS_LAST = scalar(CHANNELS_LAST_APPLIES, bool | None, None)
PREFILL_FLOPS = scalar(PREFILL_FLOPS_PER_SEQUENCE, float | None, None)
DECODE_FLOPS = scalar(DECODE_FLOPS_PER_SEQUENCE, float | None, None)
VERIFY = "verify"
# What a quick run (`run --quick`) cut short, as its caveat says it; "" for a full run.
QUICK = scalar("quick", str, "")


# --- verify's record (workflows/verify) ---------------------------------------------------


@dataclass(frozen=True)
class PairedInterval:
    """Verify's paired 95% interval of a run's accuracy difference, in points."""

    ci95_low_points: float
    ci95_high_points: float


@fact(VERIFY, empty=True)  # a verify run that failed before recording anything is one
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


# Processes the model's code left running once its worker had ended, stopped by engine/reaper
# ("pid 4242 python3"), over every process of the configuration; an entry beginning UNCHECKED
# says why the look for them failed, so that whether any were left is unknown.
LEFT_RUNNING = "left_running"
UNCHECKED = "unchecked: "
LEFT = scalar(LEFT_RUNNING, tuple[str, ...], ())


# --- ONNX Runtime and Core ML (their backends write them) ---------------------------------


ONNXRUNTIME = "onnxruntime"
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


LOADING = scalar(LOAD_S, float | None, None)
