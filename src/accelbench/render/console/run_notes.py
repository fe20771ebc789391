"""The sentences below a run table: what a result's metrics say beyond its row."""

from __future__ import annotations

from collections.abc import Sequence

from ...analysis.facts import (
    LOADING,
    CoreMLFacts,
    Drift,
    Flops,
    Generation,
    OnnxRuntimeFacts,
    Probe,
)
from ...analysis.history import MIN_HISTORY, Placement
from ...analysis.verdict import Bottleneck, decode_verdict
from ...core.result import Result
from ...devices.power import Power
from ...engine.facts import (
    FALLBACK_OPS,
    OUTPUT_USED,
    P99_MIN_SAMPLES,
    PROBE_FAILURE,
    MaxBatchSearch,
    Overhead,
    Parallel,
    percentiles,
)
from ...modes.serve import LATENCY_BOUND, Served
from ..text import format_bytes, format_seconds, number
from .serve_notes import serve_notes

__all__ = [
    "coreml_note",
    "derived_notes",
    "drift_note",
    "generation_notes",
    "history_note",
    "onnxruntime_note",
    "wall_note",
]


def derived_notes(r: Result) -> list[str]:
    """The verdict, the energy, MFU's peak, parallelism, max batch, drift and ONNX Runtime
    figures of one result, as sentences (its caveats are analysis/trust's)."""
    metrics = r.facts
    bottleneck, flops = metrics.get(Bottleneck), metrics.get_or_default(Flops)
    notes = [bottleneck.explanation] if bottleneck else []
    if metrics.get(OUTPUT_USED):
        notes.append(f"your model's forward: {metrics.get(OUTPUT_USED)}")
    if generation := metrics.get(Generation):
        notes += generation_notes(generation)
    if served := metrics.get(Served):
        notes += serve_notes(served, _bound_ms(r))
    if power := metrics.get(Power):
        notes += _power_notes(power)
    if flops.peak is not None:
        notes.append(f"MFU against {number(flops.peak / 1e12)} TFLOP/s ({flops.peak_source})")
    if parallel := metrics.get(Parallel):
        notes.append(_parallel_note(parallel, r.samples_per_second or 0))
    if max_batch := metrics.get(MaxBatchSearch):
        notes.append(_max_batch_note(max_batch))
    if metrics.get(PROBE_FAILURE):
        notes.append(_probe_failure_note(r))
    if (overhead := metrics.get(Overhead)) and (wall := wall_note(overhead, r)):
        notes.append(wall)
    if drift := metrics.get(Drift):
        notes.append(drift_note(drift))
    if ort := metrics.get(OnnxRuntimeFacts):
        notes.append(
            f"onnxruntime {ort.version}, providers {', '.join(ort.providers)}; "
            f"timed: {ort.timing}" + _caveat(ort)
        )
    if fallen := metrics.get(FALLBACK_OPS):
        notes.append(
            f"partly on the CPU: {', '.join(fallen)} fell back to the CPU "
            "(PYTORCH_ENABLE_MPS_FALLBACK=1): the figures are partly the CPU's"
        )
    if coreml := metrics.get(CoreMLFacts):
        notes.append(coreml_note(coreml, metrics.get(LOADING)))
    return notes


def _bound_ms(r: Result) -> float | None:
    bound = LATENCY_BOUND.value(r.spec)
    return float(bound) if isinstance(bound, (int, float)) else None


_UNITS = ("Neural Engine", "GPU", "CPU")


# Where a configuration's wall time goes, in the order it is spent (engine/facts.Overhead).
_PHASES = (
    ("start_s", "start"),
    ("import_s", "imports"),
    ("setup_s", "set-up"),
    ("warmup_s", "warm-up"),
    ("timed_s", "timing"),
    ("probe_s", "verdict probe"),
    ("latency_s", "latency"),
    ("drift_s", "drift check"),
    ("profile_s", "profile"),
    ("count_s", "FLOPs count"),
)


def wall_note(overhead: Overhead, r: Result) -> str:
    """Where the configuration's wall time went, phase by phase, summed over its processes
    (what `--json` stores as `overhead`); "" where the wall time was not recorded."""
    if overhead.wall_s is None:
        return ""
    spent = [(name, getattr(overhead, key)) for key, name in _PHASES]
    if served := r.facts.get(Served):  # no closed loop: its warm-up and timing do not apply
        n = len(served.runs)
        runs = f"serving ({n} LoadGen run{'s' * (n != 1)})"
        at = [name for name, _ in spent].index("warm-up")
        spent[at : at + 2] = [(runs, served.serving_s)]
    spent = [(name, s) for name, s in spent if s is not None]
    rest = overhead.wall_s - sum(s for _, s in spent)
    parts = [_spent(name, s) for name, s in spent]
    if rest >= 0.05:  # the result's way back and each process's end
        parts.append(f"the rest {rest:.1f} s")
    processes = r.measurement.processes if r.measurement is not None else 1
    over = f" over {processes} processes" if processes > 1 else ""
    return f"wall time {overhead.wall_s:.1f} s{over}: {', '.join(parts)}"


def _spent(name: str, seconds: float) -> str:
    """'imports 1.2 s'; 'serving 41.0 s (9 LoadGen runs)'."""
    word, _, rest = name.partition(" (")
    return f"{word} {seconds:.1f} s" + (f" ({rest}" if rest else "")


def _probe_failure_note(r: Result) -> str:
    """A failed probe: no verdict, unless other processes' probes ran (the verdict counts them)."""
    failure = r.facts.get(PROBE_FAILURE)
    if r.facts.get(Probe) is None:
        return f"no verdict: the smaller-batch probe failed: {failure}"
    return f"the smaller-batch probe failed in a process ({failure}); the verdict counts the others"


def coreml_note(coreml: CoreMLFacts, load_s: float | None) -> str:
    """A Core ML result's compute units, precision, load time and compute plan, as a sentence."""
    text = (
        f"Core ML (coremltools {coreml.version}), compute units {coreml.compute_units}, "
        f"computed in {coreml.compute_precision}"
    )
    if coreml.compute_precision == "fp32":
        text += " (an fp32 model never runs on the Neural Engine)"
    if load_s is not None:
        text += f"; loading took {load_s:.2f} s ({coreml.compiled}), not counted in the timing"
    if coreml.per_unit is not None and coreml.operators is not None:
        others = [unit for unit in coreml.per_unit if unit not in _UNITS]  # "undetermined"
        ran = ", ".join(f"{unit} {coreml.per_unit.get(unit, 0)}" for unit in [*_UNITS, *others])
        text += f"; the compute plan puts its {coreml.operators} operators on: {ran}"
    elif coreml.plan_unavailable:
        text += f"; no compute plan: {coreml.plan_unavailable}"
    return text


def generation_notes(g: Generation) -> list[str]:
    """A generation's phases, and why they are that fast: the bytes a decode step reads
    against the device's bandwidth, the prefill's FLOPs against its peak."""
    notes = [
        f"TTFT (time to first token: the prefill of {g.prompt_length} tokens and its token) "
        f"{_percentiles(g.prefill_s)} over {len(g.prefill_s)} generations of exactly "
        f"{g.generated_tokens} tokens"
    ]
    tpot = g.tpot_median_s
    if tpot is not None:
        notes.append(
            f"TPOT (time per output token, the first excluded: a generation's decode time over "
            f"its {g.decode_steps} steps) {_percentiles(g.tpot_s)}; decode "
            f"{number(g.batch_size / tpot)} tokens/s = batch {g.batch_size} / TPOT p50"
        )
    if g.itl_s:
        notes.append(
            f"ITL (inter-token latency: one decode step, {len(g.itl_s):,} pooled) "
            f"{_percentiles(g.itl_s)}; the TPOT is their mean within a generation"
        )
    if g.bytes_per_token is not None and tpot:  # from the raw times: one TPOT throughout
        notes.append(_bandwidth_note(g, g.bytes_per_token, g.bytes_per_token / tpot))
    if verdict := decode_verdict(g):
        notes.append(verdict)
    if g.graph_breaks is not None:
        notes.append(
            f"compiled decode step: {g.graph_breaks} graph break(s), CUDA graphs skipped "
            f"{g.cudagraph_skips or 0} time(s) in this process"
        )
    if g.prefill_flops is not None and g.prefill_achieved_flops is not None:
        text = (
            f"prefill {number(g.prefill_flops / 1e9)} GFLOP at "
            f"{number(g.prefill_achieved_flops / 1e12)} TFLOP/s"
        )
        if g.prefill_mfu is not None and g.peak_flops is not None:
            text += f", MFU {g.prefill_mfu:.1%} of {number(g.peak_flops / 1e12)} TFLOP/s"
        notes.append(text)
    return notes


def _percentiles(values: Sequence[float]) -> str:
    """Seconds as "p50 X, p90 Y, p99 Z"; a p99 from too few values says so."""
    p50, p90, p99 = percentiles(values)
    tail = format_seconds(p99) if p99 is not None else f"undetermined (under {P99_MIN_SAMPLES})"
    return f"p50 {format_seconds(p50)}, p90 {format_seconds(p90)}, p99 {tail}"


def _token_drift_note(drift: Drift) -> str:
    """A generation's drift: its logits against their spread and its tokens at the decisive
    positions; a record from before issue 27, its tokens and the first token's logits."""
    if drift.by_spread:
        return _spread_drift_note(drift)
    text = f"drift from {drift.reference}: "
    if drift.top1_agreement is not None:
        text += f"{drift.top1_agreement:.1%} of {drift.samples} generated tokens agree"
        if drift.agreeing_prefix is not None:
            text += f" (a sequence's first {drift.agreeing_prefix:g} in the median)"
    return text + f"; first-token logits' max relative error {drift.max_rel_error:.2g}"


def _spread_drift_note(drift: Drift) -> str:
    text = f"drift from {drift.reference}: "
    if drift.spread_error is None:
        return text + f"undetermined: {drift.undetermined}"
    text += (
        f"logits off by {drift.spread_error:.2g} of their spread (rms over the vocabulary, "
        f"at the worst of {drift.compared_positions} positions; {drift.spread_error_median:.2g} "
        f"in the median); tokens "
    )
    if drift.decisive_agreement is not None:
        text += f"agree at {drift.decisive_agreement:.1%} of "
    text += (
        f"{drift.decisive_positions} decisive positions of {drift.positions}, where fp32's "
        f"top token leads by more than {drift.decisive_margin:g} times that error"
    )
    if drift.top1_agreement is not None:
        text += f" ({drift.top1_agreement:.1%} of all, near-ties included)"
    return text


def _bandwidth_note(g: Generation, per_token: float, achieved: float) -> str:
    cache = format_bytes(round(g.kv_bytes_per_token or 0))
    cache = f"the whole static KV cache, {cache}" if g.static_cache else f"KV cache {cache}"
    text = (
        f"each decode step reads {format_bytes(round(per_token))} (weights "
        f"{format_bytes(g.weight_bytes)} + {cache}{'' if g.static_cache else ' on average'}): "
        f"{number(achieved / 1e9)} GB/s at the TPOT p50"
    )
    if g.peak_bandwidth:
        text += (
            f", {achieved / g.peak_bandwidth:.1%} of {number(g.peak_bandwidth / 1e9)} GB/s "
            f"({g.bandwidth_source})"
        )
    return text


def _power_notes(power: Power) -> list[str]:
    said = (
        f"{power.average_watts:.0f} W on average, {power.joules_per_sample:.3g} J "
        f"per sample, {number(power.samples_per_s_per_watt)} samples/s per watt "
        f"({power.source})"
    )
    return [said, power.warning] if power.warning else [said]


def onnxruntime_note(ort: OnnxRuntimeFacts, peak_memory_meaning: str) -> str:
    """How an ONNX Runtime result was timed and its memory read, which differs from PyTorch."""
    return f"timed as {ort.timing}; peak memory is the {peak_memory_meaning}" + _caveat(ort)


def _caveat(ort: OnnxRuntimeFacts) -> str:
    return f"; {ort.caveat}" if ort.caveat else ""


def drift_note(drift: Drift) -> str:
    """A variant's drift from the fp32 model, as a sentence."""
    if drift.error:
        return f"no drift figure: {drift.error}"
    if drift.not_finite:
        return f"drift from {drift.reference}: the outputs hold NaN or infinity"
    if drift.token_ids:
        return _token_drift_note(drift)
    text = f"drift from {drift.reference}: max relative error {drift.max_rel_error:.2g}"
    if drift.top1_agreement is not None:
        text += f", top-1 agreement {drift.top1_agreement:.1%} of {drift.samples} samples"
    return text


def _parallel_note(parallel: Parallel, samples_per_second: float) -> str:
    ranks = ", ".join(
        f"rank {x.rank} ({x.device}) {number(x.it_per_s)} it/s" for x in parallel.ranks
    )
    text = (
        f"{parallel.world_size} data-parallel processes, aggregate "
        f"{number(samples_per_second)} samples/s; {ranks}"
    )
    single = parallel.single_process_samples_per_s
    if parallel.scaling_efficiency is not None and single is not None:
        text += (
            f"; scaling efficiency {parallel.scaling_efficiency:.1%} of "
            f"{parallel.world_size} x {number(single)} samples/s (one process)"
        )
    elif parallel.scaling_unavailable:
        text += f"; no scaling efficiency: {parallel.scaling_unavailable}"
    return text


def _max_batch_note(found: MaxBatchSearch) -> str:
    tried = ", ".join(f"{batch} {status}" for batch, status in found.probes)
    memory = format_bytes(found.device_memory)
    text = f"largest batch that fits: {found.largest} (device memory {memory}; tried {tried})"
    if found.limit_reached:
        text += "; the search stopped at its limit, not at the memory's"
    if found.stopped_by:
        text += f"; stopped by {found.stopped_by}"
    return text


def history_note(placed: Placement) -> str:
    """Where a run landed against its configuration's earlier runs on its machine: the spread
    between runs and the next run's prediction interval, beside the run's own interval."""
    found = placed.prediction
    if found is None:
        return (
            f"between runs: undetermined: {placed.earlier} earlier runs of this configuration "
            f"on this machine, needs {MIN_HISTORY} for a prediction interval"
        )
    where = "fell inside it" if placed.inside else "fell OUTSIDE it"
    return (
        f"between runs: sd {found.spread:.1%} over the {found.runs} earlier runs on this "
        f"machine; the next run's 95% prediction interval {number(found.low)}–"
        f"{number(found.high)} samples/s (it detects a change of −{found.slowdown:.1%} or "
        f"+{found.speedup:.1%}); this run, {number(placed.rate)}, {where}"
    )
