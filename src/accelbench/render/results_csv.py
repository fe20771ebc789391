"""Stored results as CSV, one row a result, for pandas and spreadsheets (`results export
--format csv`).

Every figure the console shows is a column. The columns: the result's identity (id, uid, when,
sweep), the spec's fields and every lever's value, then status and error; samples/s (tokens/s
for generate) and it/s, each median with its 95% CI, the samples/s IQR, the step time and the
first (warm-up) it; the number of timed samples and of the worker processes that took them
(measured_processes: the spec's own "processes" is data parallelism's), the spread between and
within those processes (relative sds); peak memory (bytes) and what it counts; the batch-1
latency's p50, p90 and p99; a generation's TTFT p50 and TPOT p50 and p90 (analysis/facts'
Generation defines them) and decode tokens/s; the model's parameters, FLOPs per sample,
achieved FLOP/s and MFU; average watts, joules per sample and samples/s per watt; the verdict's
kind and words; the result's caveats (analysis/trust, joined by " | "); and where it ran (host,
machine, device model). Times are in seconds. A figure a result has not (a failure, a verify
run, training's latency) is an empty cell. "vs CPU" is left out: it is a ratio between two
rows, which the reader can take.
Numbers are written in full precision, so they read back equal.

A text cell that a spreadsheet would take for a formula (one starting with =, +, -, @, a tab or
a carriage return: a hostile model name, say) is written with a leading apostrophe, as OWASP
advises; that is the one change a value can undergo.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from typing import Any

from ..analysis.facts import Flops, Generation, partial
from ..analysis.trust import trust_of
from ..analysis.verdict import Bottleneck
from ..core.result import Result, machine_of
from ..devices.power import Power
from ..engine.facts import PARAMETER_COUNT, Latency, percentiles
from ..levers import spec_json

__all__ = ["CSV_FIGURES", "results_csv"]

_IDENTITY = ("id", "uid", "created_at", "sweep")
CSV_FIGURES = (
    "status",
    "error",
    "samples_per_s_median",
    "samples_per_s_ci95_low",
    "samples_per_s_ci95_high",
    "samples_per_s_iqr",
    "it_per_s_median",
    "it_per_s_ci95_low",
    "it_per_s_ci95_high",
    "step_time_s",
    "first_it_s",
    "samples",
    "measured_processes",
    "planned_processes",
    "partial",
    "between_process_sd",
    "within_process_sd",
    "peak_memory_bytes",
    "peak_memory_meaning",
    "latency_b1_p50_s",
    "latency_b1_p90_s",
    "latency_b1_p99_s",
    "ttft_p50_s",
    "tpot_p50_s",
    "tpot_p90_s",
    "decode_tokens_per_s",
    "parameters",
    "flops_per_sample",
    "achieved_flops_per_s",
    "mfu",
    "average_watts",
    "joules_per_sample",
    "samples_per_s_per_watt",
    "verdict",
    "verdict_explanation",
    "caveats",
    "host",
    "machine",
    "device_model",
)
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def results_csv(results: Sequence[Result]) -> str:
    """The results as CSV text with a header row; spec columns as the levers registry names
    them, plus any lever a result stored that this process has not registered."""
    specs = [spec_json(r.spec) for r in results]
    spec_columns = list(dict.fromkeys(key for spec in specs for key in spec))
    buffer = io.StringIO()
    writer = csv.DictWriter(
        buffer, fieldnames=[*_IDENTITY, *spec_columns, *CSV_FIGURES], lineterminator="\n"
    )
    writer.writeheader()
    for result, spec in zip(results, specs, strict=True):
        row = {**_identity(result), **spec, **_figures(result)}
        writer.writerow({key: _cell(value) for key, value in row.items()})
    return buffer.getvalue()


def _identity(r: Result) -> dict[str, Any]:
    return {"id": r.id, "uid": r.uid, "created_at": r.created_at, "sweep": r.sweep}


def _figures(r: Result) -> dict[str, Any]:
    facts = r.facts
    verdict, flops = facts.get(Bottleneck), facts.get_or_default(Flops)
    return {
        "status": r.status,
        "error": r.error,
        **_timing(r),
        "peak_memory_bytes": r.peak_memory,
        "peak_memory_meaning": r.peak_memory_meaning if r.peak_memory is not None else "",
        **_latency(r),
        **_generation(r),
        "parameters": facts.get(PARAMETER_COUNT),
        "flops_per_sample": flops.per_sample,
        "achieved_flops_per_s": flops.achieved,
        "mfu": flops.mfu,
        **_energy(r),
        "verdict": verdict.kind if verdict else "",
        "verdict_explanation": verdict.explanation if verdict else "",
        "caveats": " | ".join(trust_of(r).texts),
        "host": r.environment.get("host", ""),
        "machine": machine_of(r.environment),
        "device_model": r.environment.get("device_model", ""),
    }


def _timing(r: Result) -> dict[str, Any]:
    """The rates with their intervals (samples/s is it/s times the samples in an it), the
    step time, the first warm-up it and how the samples were taken."""
    m = r.measurement
    if m is None:
        return {}
    rate, per, spread = m.rate, r.samples_per_block, m.spread
    return {
        "samples_per_s_median": r.samples_per_second,
        "samples_per_s_ci95_low": None if rate.ci_low is None else rate.ci_low * per,
        "samples_per_s_ci95_high": None if rate.ci_high is None else rate.ci_high * per,
        "samples_per_s_iqr": rate.iqr * per,
        "it_per_s_median": rate.median,
        "it_per_s_ci95_low": rate.ci_low,
        "it_per_s_ci95_high": rate.ci_high,
        "step_time_s": m.time.median / r.spec.steps_per_block,
        "first_it_s": m.warmup[0] if m.warmup else None,
        "samples": len(m.samples),
        "measured_processes": m.processes,
        # fewer measured than planned: an interrupted sweep's row, which --resume completes
        "planned_processes": (partial(r) or (m.processes, m.processes))[1],
        "partial": partial(r) is not None,
        "between_process_sd": spread.between if spread else None,
        "within_process_sd": spread.within if spread else None,
    }


def _latency(r: Result) -> dict[str, Any]:
    found = r.facts.get(Latency)
    if found is None:
        return {}
    return {
        "latency_b1_p50_s": found.p50_s,
        "latency_b1_p90_s": found.p90_s,
        "latency_b1_p99_s": found.p99_s,
    }


def _generation(r: Result) -> dict[str, Any]:
    g = r.facts.get(Generation)
    if g is None:
        return {}
    tpot = percentiles(g.tpot_s) if g.tpot_s else None
    return {
        "ttft_p50_s": g.prefill_median_s,
        "tpot_p50_s": tpot[0] if tpot else None,
        "tpot_p90_s": tpot[1] if tpot else None,
        "decode_tokens_per_s": g.batch_size / tpot[0] if tpot else None,
    }


def _energy(r: Result) -> dict[str, Any]:
    power = r.facts.get(Power)
    if power is None:
        return {}
    return {
        "average_watts": power.average_watts,
        "joules_per_sample": power.joules_per_sample,
        "samples_per_s_per_watt": power.samples_per_s_per_watt,
    }


def _cell(value: Any) -> Any:
    """None as an empty cell; a text that would run as a formula, defused."""
    if value is None:
        return ""
    if isinstance(value, str) and value.startswith(_FORMULA_STARTS):
        return "'" + value
    return value
