"""`accelbench run`'s tables: one per workload, a row per configuration, and notes below."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from ...analysis.facts import Flops, Generation
from ...analysis.history import Placement
from ...analysis.trust import trust_of
from ...core.modes import mode_of
from ...core.result import Result
from ...devices.kinds import BASELINE_DEVICE, is_baseline
from ...devices.power import POWER_MISSING
from ...engine.facts import FALLBACK_OPS, LATENCY_FAILURE, Latency
from ...levers import label
from ..rows import latency_percentiles, samples_unit, shared_unit
from ..text import format_bytes, format_seconds, interval, number
from .run_notes import derived_notes, history_note
from .table import new_table, render_table

__all__ = ["run_tables"]

_RUN_HEADERS = (
    "device",
    "model",
    "configuration",
    "samples/s",
    "95% CI",
    "IQR",
    "it/s",
    "step time",
    "TFLOP/s",
    "MFU",
    "peak memory",
    "first it",
    "vs CPU",
)


def run_tables(
    results: Sequence[Result], width: int = 120, history: Mapping[str, Placement] | None = None
) -> str:
    """Seed 000's table, done right: one table per workload, a row per configuration, each
    with its notes; `history`, by uid, where each run landed against its configuration's
    earlier runs. The legend of the columns, the same for every table, comes once, last."""
    by_workload: dict[str, list[Result]] = {}
    for r in results:
        by_workload.setdefault(r.spec.workload, []).append(r)
    placed = history or {}
    tables = "".join(_run_table(name, rows, width, placed) for name, rows in by_workload.items())
    headers = {h for rows in by_workload.values() for h in _headers(rows)}
    legend = _legend(results, tuple(headers))
    return tables + (f"{legend}\n" if legend else "")


def _run_table(
    workload: str, results: Sequence[Result], width: int, history: Mapping[str, Placement]
) -> str:
    headers = _headers(results)
    table = new_table(f"accelbench: {workload}", headers, left_columns=3)
    baseline = {  # "vs CPU": the same configuration on the baseline device
        r.spec: r.measurement.rate.median
        for r in results
        if is_baseline(r.spec.device) and r.measurement
    }
    one_unit = shared_unit(results)  # then the header says it, and no cell
    notes: dict[str, list[str]] = {}  # note -> the configurations (or devices) it is about
    for r in results:
        who = f"{r.spec.device} {label(r.spec)}"
        head = (r.spec.device, r.environment.get("device_model", ""), _configuration(r))
        if r.measurement is None:
            table.add_row(*head, r.status.upper(), *[""] * (len(headers) - 4))
            notes.setdefault(f"{r.status}: {r.error}", []).append(who)
            continue
        on_baseline = baseline.get(replace(r.spec, device=BASELINE_DEVICE))
        unit = "" if one_unit else samples_unit(r)
        cells = _figures(r, on_baseline, unit)
        if one_unit:  # the rate's column is named after its unit
            cells[one_unit] = cells["samples/s"]
        table.add_row(*head, *(cells[h] for h in headers[3:]))
        placed = [history_note(history[r.uid])] if r.uid in history else []
        for note in [*trust_of(r).texts, *placed, *derived_notes(r), *_latency_notes(r)]:
            notes.setdefault(note, []).append(who)
        for note in _device_notes(r):
            notes.setdefault(note, []).append(r.spec.device)
    lines = []
    for note, whos in notes.items():
        unique = list(dict.fromkeys(whos))
        lines.append(f"{'all' if len(whos) == len(results) else '; '.join(unique)}: {note}")
    return render_table(table, lines, width)


def _configuration(r: Result) -> str:
    """The row's label, flagged where operators fell back to the CPU (the notes name them)."""
    flag = " (partly on the CPU)" if r.facts.get(FALLBACK_OPS) else ""
    return label(r.spec) + flag


def _device_notes(r: Result) -> list[str]:
    """What holds for every result of the device: what its memory figure means, its power."""
    notes = [
        f"peak memory is the {r.peak_memory_meaning}",
        r.facts.get(POWER_MISSING),
    ]
    return [note for note in notes if note]


def _latency_notes(r: Result) -> list[str]:
    """The per-request latency at batch 1 (too wide a figure for a column of this table)."""
    facts = r.facts
    if facts.get(LATENCY_FAILURE):
        return [f"no latency at batch 1: {facts.get(LATENCY_FAILURE)}"]
    found = facts.get(Latency)
    if found is None:
        return []
    p50, p90, p99 = latency_percentiles(found)
    return [
        f"latency at batch 1 over {found.samples:,} steps ({found.source}): "
        f"p50 {p50}, p90 {p90}, p99 {p99}"
    ]


def _headers(results: Sequence[Result]) -> tuple[str, ...]:
    """The run table's columns: a generation's TTFT and TPOT where a row has its phases
    (the Generation fact); where every measured row has them, FLOP/s and MFU are the
    prefill's, in the notes. A column that says nothing here is left out: MFU where no
    device has a peak figure, vs CPU where every row ran on the CPU."""
    headers: tuple[str, ...] = _RUN_HEADERS
    phased = [r.facts.get(Generation) is not None for r in results if r.measurement]
    if any(phased):
        at = _RUN_HEADERS.index("step time") + 1
        headers = (*_RUN_HEADERS[:at], "TTFT", "TPOT", *_RUN_HEADERS[at:])
    left_out: set[str] = set()
    if phased and all(phased):
        left_out |= {"TFLOP/s", "MFU"}
    if unit := shared_unit(results):
        headers = tuple(unit if h == "samples/s" else h for h in headers)
    if all(r.facts.get_or_default(Flops).mfu is None for r in results):
        left_out.add("MFU")
    if all(is_baseline(r.spec.device) for r in results):
        left_out.add("vs CPU")
    return tuple(h for h in headers if h not in left_out)


def _figures(r: Result, cpu_rate: float | None, unit: str = "") -> dict[str, str]:
    """The measured cells of one row of the run table by column; `unit` follows the
    samples/s cell where the column mixes samples and tokens."""
    m, flops, g = r.measurement, r.facts.get_or_default(Flops), r.facts.get(Generation)
    assert m is not None
    per = r.samples_per_block  # the interval is on the figure read: samples/s
    tpot = g.tpot_median_s if g else None
    rate = number(m.rate.median * per) + unit
    looped = mode_of(r.spec).closed_loop  # else its one sample a process is not an it
    return {
        "samples/s": rate,
        "95% CI": interval(m.rate, per),
        "IQR": number(m.rate.iqr * per),
        "it/s": number(m.rate.median) if looped else "—",
        "step time": format_seconds(m.time.median / r.spec.steps_per_block) if looped else "—",
        "TTFT": format_seconds(g.prefill_median_s) if g else "—",
        "TPOT": format_seconds(tpot) if tpot is not None else "—",
        "TFLOP/s": number(flops.achieved / 1e12) if flops.achieved is not None else "—",
        "MFU": f"{flops.mfu:.1%}" if flops.mfu is not None else "—",
        "peak memory": format_bytes(r.peak_memory),
        "first it": format_seconds(m.warmup[0]) if m.warmup else "—",
        "vs CPU": f"{m.rate.median / cpu_rate:.2f}x" if cpu_rate else "—",
    }


def _legend(results: Sequence[Result], headers: Sequence[str]) -> str:
    if not any(r.measurement for r in results):
        return ""
    generate = ""
    if any(r.facts.get(Generation) is not None for r in results):
        generate = (
            " For generate, one it is one whole generation (prefill and every new token, "
            "greedy, no early stop), it/s is generations/s, tokens/s = batch x new tokens per "
            "generation, and step time is the end-to-end latency; TTFT and TPOT are the "
            "medians of the generations' time to first token and time per output token (the "
            "first excluded), defined in the notes; TFLOP/s and MFU are the prefill's, in the "
            "notes."
        )
    if not all(mode_of(r.spec).closed_loop for r in results):
        generate += (
            " For serve, samples/s is the scenario's figure under MLPerf LoadGen (server: the "
            "highest QPS LoadGen judged VALID at the p99 bound; offline: its throughput; "
            "singlestream: 1 / its p90 latency; multistream: 8 / the p99 latency of its "
            "groups of 8 samples), one figure a process; it/s and step time do "
            "not apply, and TFLOP/s is the FLOPs of the samples served per second."
        )
    return (
        "it = the workload's steps per it on one fixed batch, timed in several processes; "
        "samples/s = it/s x the samples in an it, where it/s is the geometric mean of the "
        "processes' medians over their timed its (warm-up excluded, the device synchronized at "
        "each it's boundaries); its 95% CI = Student's t over the processes' medians (in one "
        "process, distribution-free over its its, holding for that process only); IQR over all "
        "its; step time = it time / steps per it; TFLOP/s "
        "from FLOPs counted by torch.utils.flop_counter; MFU against the device's peak for the "
        "precision; first it = the first warm-up it (compilation, autotuning)"
        + ("; vs CPU = ratio against the same configuration on the CPU" * ("vs CPU" in headers))
        + "."
        + generate
    )
