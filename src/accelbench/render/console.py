"""Console renderers. Each returns a string; printing happens in the CLI."""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from rich.console import Console
from rich.table import Table

from ..core.result import Result
from ..core.stats import Summary
from ..devices import Device
from ..levers import label
from ..workloads import Workload

__all__ = [
    "devices_table",
    "format_bytes",
    "results_table",
    "run_tables",
    "verify_table",
    "workloads_table",
]


def format_bytes(n: int | None) -> str:
    if n is None:
        return "—"
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def format_seconds(s: float) -> str:
    if s >= 1:
        return f"{s:.3f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.3f} ms"
    return f"{s * 1e6:.1f} µs"


def _num(x: float) -> str:
    """Enough digits to compare two figures, no more."""
    magnitude = abs(x)
    if magnitude >= 100:
        return f"{x:,.0f}"
    if magnitude >= 10:
        return f"{x:.1f}"
    if magnitude >= 1:
        return f"{x:.2f}"
    return f"{x:.3g}"


def _ci(summary: Summary) -> str:
    if summary.ci_low is None or summary.ci_high is None:
        return "n/a"
    return f"{_num(summary.ci_low)}–{_num(summary.ci_high)}"


def _table(title: str, headers: Sequence[str], left_columns: int | None = None) -> Table:
    """A table with these headers; past `left_columns` (numbers) they align right."""
    table = Table(title=title, title_justify="left")
    for i, header in enumerate(headers):
        right = left_columns is not None and i >= left_columns
        table.add_column(header, justify="right" if right else "left")
    return table


def _render(table: Table, notes: Sequence[str] = (), width: int = 120) -> str:
    buffer = io.StringIO()
    console = Console(file=buffer, width=width, no_color=True, highlight=False, soft_wrap=False)
    console.print(table)
    for note in notes:
        console.print(note, soft_wrap=True)
    # rich pads lines to the console width; trailing blanks only get in the way of a reader
    return "\n".join(line.rstrip() for line in buffer.getvalue().splitlines()) + "\n"


def run_tables(results: Sequence[Result], width: int = 120) -> str:
    """Seed 000's table, done right: one table per workload, a row per configuration."""
    by_workload: dict[str, list[Result]] = {}
    for r in results:
        by_workload.setdefault(r.spec.workload, []).append(r)
    return "".join(_run_table(name, rows, width) for name, rows in by_workload.items())


_RUN_HEADERS = (
    "device",
    "model",
    "configuration",
    "it/s",
    "IQR",
    "95% CI",
    "samples/s",
    "step time",
    "TFLOP/s",
    "MFU",
    "peak memory",
    "first it",
    "vs CPU",
)


def _run_table(workload: str, results: Sequence[Result], width: int) -> str:
    table = _table(f"accelbench: {workload}", _RUN_HEADERS, left_columns=3)
    cpu = {
        replace(r.spec, device="cpu"): r.measurement.rate.median
        for r in results
        if r.spec.device == "cpu" and r.measurement
    }
    notes: dict[str, list[str]] = {}  # note -> the configurations (or devices) it is about
    for r in results:
        who = f"{r.spec.device} {label(r.spec)}"
        head = (r.spec.device, r.environment.get("device_model", ""), label(r.spec))
        if r.measurement is None:
            table.add_row(*head, r.status.upper(), *[""] * (len(_RUN_HEADERS) - 4))
            notes.setdefault(f"{r.status}: {r.error}", []).append(who)
            continue
        table.add_row(*head, *_figures(r, cpu.get(replace(r.spec, device="cpu"))))
        for note in [*r.measurement.warnings, *_derived_notes(r)]:
            notes.setdefault(note, []).append(who)
        for note in [
            r.environment.get("caveat", ""),
            f"peak memory is the {r.peak_memory_meaning}",
            r.metrics.get("power_unavailable", ""),
        ]:
            if note:
                notes.setdefault(note, []).append(r.spec.device)
    lines = [_legend(results)]
    for note, whos in notes.items():
        unique = list(dict.fromkeys(whos))
        lines.append(f"{'all' if len(whos) == len(results) else '; '.join(unique)}: {note}")
    return _render(table, lines, width)


def _figures(r: Result, cpu_rate: float | None) -> list[str]:
    """The measured columns of one row of the run table."""
    m, metrics = r.measurement, r.metrics
    assert m is not None
    return [
        _num(m.rate.median),
        _num(m.rate.iqr),
        _ci(m.rate),
        _num(m.rate.median * r.samples_per_block),
        format_seconds(m.time.median / r.spec.steps_per_block),
        _num(metrics["achieved_flops"] / 1e12) if "achieved_flops" in metrics else "—",
        f"{metrics['mfu']:.1%}" if "mfu" in metrics else "—",
        format_bytes(r.peak_memory),
        format_seconds(m.warmup[0]) if m.warmup else "—",
        f"{m.rate.median / cpu_rate:.2f}x" if cpu_rate else "—",
    ]


def _derived_notes(r: Result) -> list[str]:
    """The verdict and the energy figures of one result, as sentences."""
    notes = []
    verdict = r.metrics.get("verdict")
    if verdict:
        notes.append(verdict["explanation"])
    power = r.metrics.get("power")
    if power:
        notes.append(
            f"{power['average_watts']:.0f} W on average, {r.metrics['joules_per_sample']:.3g} J "
            f"per sample, {_num(r.metrics['samples_per_s_per_watt'])} samples/s per watt "
            f"({power['source']})"
        )
    if "power_warning" in r.metrics:
        notes.append(r.metrics["power_warning"])
    if "peak_source" in r.metrics:
        notes.append(
            f"MFU against {_num(r.metrics['peak_flops'] / 1e12)} TFLOP/s "
            f"({r.metrics['peak_source']})"
        )
    if "ranks" in r.metrics:
        notes.append(_parallel_note(r))
    if "max_batch" in r.metrics:
        notes.append(_max_batch_note(r.metrics))
    if "probe_error" in r.metrics:
        notes.append(f"no verdict: the smaller-batch probe failed: {r.metrics['probe_error']}")
    if "drift" in r.metrics:
        notes.append(drift_note(r.metrics["drift"]))
    if "onnxruntime" in r.metrics:
        ort = r.metrics["onnxruntime"]
        notes.append(
            f"onnxruntime {ort['onnxruntime']}, providers {', '.join(ort['providers'])}; "
            f"timed: {ort['timing']}" + (f"; {ort['caveat']}" if ort.get("caveat") else "")
        )
    return notes


def drift_note(drift: dict[str, Any]) -> str:
    """A variant's drift from the fp32 model, as a sentence."""
    if "error" in drift:
        return f"no drift figure: {drift['error']}"
    if drift.get("not_finite"):
        return f"drift from {drift['reference']}: the outputs hold NaN or infinity"
    text = f"drift from {drift['reference']}: max relative error {drift['max_rel_error']:.2g}"
    if "top1_agreement" in drift:
        text += f", top-1 agreement {drift['top1_agreement']:.1%} of {drift['samples']} samples"
    return text


def _parallel_note(r: Result) -> str:
    metrics = r.metrics
    ranks = ", ".join(
        f"rank {x['rank']} ({x['device']}) {_num(x['it_per_s'])} it/s" for x in metrics["ranks"]
    )
    text = (
        f"{metrics['world_size']} data-parallel processes, aggregate "
        f"{_num(r.samples_per_second or 0)} samples/s; {ranks}"
    )
    if "scaling_efficiency" in metrics:
        text += (
            f"; scaling efficiency {metrics['scaling_efficiency']:.1%} of "
            f"{metrics['world_size']} x {_num(metrics['single_process_samples_per_s'])} "
            "samples/s (one process)"
        )
    elif "scaling_unavailable" in metrics:
        text += f"; no scaling efficiency: {metrics['scaling_unavailable']}"
    return text


def _max_batch_note(metrics: dict[str, Any]) -> str:
    tried = ", ".join(f"{batch} {status}" for batch, status in metrics["max_batch_probes"])
    memory = format_bytes(metrics.get("device_memory"))
    text = (
        f"largest batch that fits: {metrics['max_batch']} (device memory {memory}; tried {tried})"
    )
    if metrics.get("max_batch_limit_reached"):
        text += "; the search stopped at its limit, not at the memory's"
    if metrics.get("max_batch_stopped_by"):
        text += f"; stopped by {metrics['max_batch_stopped_by']}"
    return text


def _legend(results: Sequence[Result]) -> str:
    if not any(r.measurement for r in results):
        return ""
    return (
        "it = the workload's steps per it on one fixed batch; it/s is the median over timed its "
        "(warm-up excluded), the device synchronized at each it's boundaries; IQR and a "
        "distribution-free 95% CI of the median; step time = median it time / steps per it; "
        "TFLOP/s from FLOPs counted by torch.utils.flop_counter; MFU against the device's "
        "peak for the precision; first it = the first warm-up it (compilation, autotuning); "
        "vs CPU = ratio of medians against the same configuration on the CPU."
    )


def results_table(results: Sequence[Result], width: int = 120) -> str:
    headers = (
        "id",
        "when (UTC)",
        "workload",
        "device",
        "model",
        "configuration",
        "it/s",
        "95% CI",
        "samples/s",
        "status",
        "host",
    )
    table = _table(f"{len(results)} stored result(s), newest first", headers)
    for r in results:
        m = r.measurement
        table.add_row(
            str(r.id),
            r.created_at.replace("T", " ").removesuffix("+00:00"),
            r.spec.workload,
            r.spec.device,
            r.environment.get("device_model", ""),
            label(r.spec),
            _num(m.rate.median) if m else "—",
            _ci(m.rate) if m else "—",
            _num(m.rate.median * r.samples_per_block) if m else "—",
            _status(r),
            r.environment.get("host", ""),
        )
    return _render(table, width=width)


def _status(r: Result) -> str:
    """A stored result's status; a verify result's verdict and accuracy with it."""
    status = r.status if r.status == "ok" else f"{r.status}: {r.error}"
    facts = r.verification
    if facts is None:
        return status
    if r.status != "ok":
        return f"verify {status}"
    return f"verify {facts.get('verdict', '?')}: {facts.get('accuracy', 0):.1%} held-out"


def devices_table(devices: Sequence[Device], width: int = 120) -> str:
    headers = ("device", "available", "model", "memory", "precisions", "details")
    table = _table("devices PyTorch can see from here", headers)
    for d in devices:
        table.add_row(
            d.name,
            "yes" if d.available else f"no: {d.reason}",
            d.model,
            format_bytes(d.total_memory),
            ", ".join(d.dtypes.names()) if d.available else "",
            "; ".join([f"{k} {v}" for k, v in d.details] + ([d.caveat] if d.caveat else [])),
        )
    return _render(table, width=width)


def workloads_table(workloads: Sequence[Workload], width: int = 120) -> str:
    headers = ("name", "batch", "input shape", "steps per it", "default its", "description")
    table = _table("workloads", headers)
    for w in workloads:
        table.add_row(
            w.name,
            str(w.batch_size),
            "x".join(map(str, w.input_shape)),
            str(w.steps_per_block),
            str(w.default_blocks) if w.default_blocks else "stop rule",
            w.description,
        )
    return _render(table, width=width)


def calibration_table(rows: Sequence[tuple[Device, Any, Any]], width: int = 120) -> str:
    """Measured peaks beside the published ones (rows of device, measured, published)."""
    headers = ("device", "model", "fp32", "tf32", "fp16", "bf16", "bandwidth")
    table = _table("calibration: measured (published)", headers, left_columns=2)
    for device, measured, published in rows:
        cells = []
        for precision in ("fp32", "tf32", "fp16", "bf16"):
            cells.append(
                _pair(
                    measured.flops.get(precision),
                    published.flops.get(precision) if published else None,
                    1e12,
                    "TFLOP/s",
                )
            )
        cells.append(
            _pair(measured.bandwidth, published.bandwidth if published else None, 1e9, "GB/s")
        )
        table.add_row(device.name, device.model, *cells)
    notes = [f"{d.name}: {m.source}" for d, m, _ in rows]
    notes += [f"{d.name} published: {p.source}" for d, _, p in rows if p]
    return _render(table, notes, width)


def _pair(measured: float | None, published: float | None, scale: float, unit: str) -> str:
    if measured is None:
        return "—"
    text = f"{_num(measured / scale)} {unit}"
    return f"{text} ({_num(published / scale)})" if published else text


def compare_table(comparison: Any, width: int = 120) -> str:
    """A compare.Comparison: each result beside its group's baseline."""
    by = comparison.by
    headers = (
        "workload",
        "configuration",
        by,
        "it/s",
        "95% CI",
        "samples/s",
        f"vs {comparison.baseline_value or 'baseline'} [95% CI]",
    )
    table = _table(f"compared by {by}", headers, left_columns=3)
    for row in comparison.rows:
        r, m = row.result, row.result.measurement
        versus = row.speedup.text() if row.speedup else ("baseline" if row.baseline is r else "—")
        table.add_row(
            r.spec.workload,
            label(r.spec),
            row.value,
            _num(m.rate.median),
            _ci(m.rate),
            _num(m.rate.median * r.samples_per_block),
            versus,
        )
    notes = [
        "speedup = ratio of median samples/s; its 95% CI is a bootstrap over the raw samples; "
        "(n.s.) marks a difference the interval cannot tell from none"
    ]
    if not comparison.rows:
        notes = ["no results match: nothing to compare (check the filters)"]
    return _render(table, notes, width)


def changes_table(changes: Sequence[Any], threshold: float, width: int = 120) -> str:
    """compare.Change rows: candidate against baseline, regressions marked."""
    headers = (
        "workload",
        "device",
        "configuration",
        "baseline it/s",
        "candidate it/s",
        "candidate / baseline [95% CI]",
        "verdict",
    )
    table = _table(f"regression check (threshold {threshold:.0%})", headers, left_columns=3)
    for c in changes:
        faster = c.speedup is not None and c.speedup.significant and c.speedup.ratio > 1
        verdict = "REGRESSION" if c.regression else ("faster" if faster else "ok")
        cand = c.candidate.measurement
        table.add_row(
            c.spec.workload,
            c.spec.device,
            label(c.spec),
            _num(c.baseline.measurement.rate.median),
            _num(cand.rate.median) if cand else c.candidate.status.upper(),
            c.speedup.text() if c.speedup else f"failed: {c.candidate.error}",
            verdict,
        )
    notes = [] if changes else ["no configuration of the baseline run is in the candidate run"]
    return _render(table, notes, width)


def export_table(reports: Sequence[Any], width: int = 120) -> str:
    """export.ExportReport rows: the file, what it holds, and how it compares with PyTorch."""
    headers = ("target", "file", "made by", "ops", "size", "check against PyTorch")
    table = _table("export", headers)
    notes = []
    for r in reports:
        facts, check = r.facts, r.validation
        made = facts.get("exporter") or f"{facts.get('format', '')} ({facts.get('compute_units')})"
        if "opset" in facts:
            made += f", opset {facts['opset']}"
        if check.get("ok") is None:
            verdict = check.get("skipped") or check.get("error", "")
        else:
            verdict = (
                f"{'ok' if check['ok'] else 'FAILED'}: max relative error "
                f"{check['max_rel_error']:.2g} (tolerance {check.get('tolerance', '?')})"
                if "max_rel_error" in check
                else f"FAILED: {check.get('error')}"
            )
        size = format_bytes(facts["bytes"]) if "bytes" in facts else "—"
        table.add_row(r.target, r.path, made, str(facts.get("ops", "—")), size, verdict)
        if "inputs" in facts and isinstance(facts["inputs"], dict):
            notes.append(f"{r.target}: inputs {facts['inputs']}, outputs {facts['outputs']}")
        notes += [f"{r.target}: {note}" for note in r.notes]
    return _render(table, notes, width)


_OPTIMIZE_HEADERS = (
    "variant",
    "samples/s",
    "vs fp32 eager (95% CI)",
    "peak memory",
    "max rel. error",
    "top-1 agree",
    "within tolerance",
)


def optimize_table(verdicts: Sequence[Any], chosen: Any, ladder: Any, width: int = 120) -> str:
    """The ladder as a table, what did not pay and why, and the recommendation with its code."""
    from ..workflows.optimize import settings_code

    base = verdicts[0].result.spec
    title = (
        f"accelbench optimize: {base.workload} {base.mode} b{base.batch_size} on "
        f"{ladder.device.name}"
    )
    table = _table(title, _OPTIMIZE_HEADERS, left_columns=1)
    notes: list[str] = []
    for v in verdicts:
        table.add_row(v.rung.name, *_optimize_cells(v))
        if v.result.measurement is None:
            notes.append(f"{v.rung.name}: {v.result.status}: {v.result.error}")
        elif v.refused:
            notes.append(f"{v.rung.name}: refused: {v.refused}")
        if v.note:
            notes.append(f"{v.rung.name}: {v.note}")
    notes += [f"not tried: {lever}: {why}" for lever, why in ladder.not_tried.items()]
    notes += _backend_notes(verdicts)
    tolerance = ladder.tolerance
    notes.append(
        f"drift: outputs against the fp32 model's on the benchmark's batch (same weights); "
        f"tolerance: max relative error {tolerance.max_rel_error:g}, top-1 agreement "
        f"{tolerance.min_top1:.0%} or more (classifiers)"
    )
    if ladder.device.caveat:
        notes.append(ladder.device.caveat)
    notes += _recommendation(chosen, verdicts[0], settings_code(chosen.result.spec, ladder.device))
    return _render(table, notes, width)


def _backend_notes(verdicts: Sequence[Any]) -> list[str]:
    """How ONNX Runtime rows were timed and their memory read, which differs from PyTorch's."""
    notes = []
    for v in verdicts:
        r = v.result
        ort = r.metrics.get("onnxruntime")
        if ort and r.measurement is not None:
            notes.append(
                f"{v.rung.name}: timed as {ort['timing']}; peak memory is the "
                f"{r.peak_memory_meaning}" + (f"; {ort['caveat']}" if ort.get("caveat") else "")
            )
    return notes


def _optimize_cells(v: Any) -> list[str]:
    r = v.result
    if r.measurement is None:
        return [r.status.upper(), "", "", "", "", ""]
    drift = r.metrics.get("drift") or {}
    top1, error = drift.get("top1_agreement"), drift.get("max_rel_error")
    baseline = v.baseline
    return [
        _num(r.samples_per_second or 0),
        "1.00x (baseline)" if baseline else (v.speedup.text() if v.speedup else "—"),
        format_bytes(r.peak_memory),
        "not finite" if drift.get("not_finite") else (f"{error:.2g}" if error is not None else "—"),
        f"{top1:.1%}" if top1 is not None else "—",
        "baseline" if baseline else ("no" if v.refused else "yes"),
    ]


def _recommendation(chosen: Any, baseline: Any, code: list[str]) -> list[str]:
    if baseline.result.measurement is None:
        return ["no recommendation: fp32 eager, the baseline, did not run"]
    if chosen is baseline:
        head = "recommendation: stay with fp32 eager: no variant within tolerance is faster " + (
            "with its 95% CI above 1"
        )
    else:
        head = f"recommendation: {chosen.rung.name}, {chosen.speedup.text()} over fp32 eager"
        spec = chosen.result.spec
        head += f" (accelbench configuration: {label(spec)})"
    return [head, *(f"    {line}" for line in code)]


_VERIFY_HEADERS = (
    "device",
    "precision",
    "final loss",
    "held-out accuracy",
    "vs CPU fp32",
    "max loss deviation",
    "verdict",
)


def verify_table(results: Sequence[Result], notes: Sequence[str] = (), width: int = 120) -> str:
    """`accelbench verify`'s results: each run against the CPU fp32 baseline, and why not ok."""
    workload = results[0].spec.workload if results else ""
    table = _table(f"accelbench verify: {workload}", _VERIFY_HEADERS, left_columns=2)
    table.columns[-1].justify = "left"  # the verdict is words
    curves, said = [], list(notes)
    for r in results:
        facts = r.verification or {}
        table.add_row(r.spec.device, r.spec.precision, *_verify_cells(r, facts))
        if r.status == "ok" and "loss_curve" in facts:
            curve = " ".join(map(_loss, facts["loss_curve"]))
            curves.append(f"  {r.spec.device} {r.spec.precision}: {curve}")
        because = facts.get("inconclusive_because")
        if because and f"INCONCLUSIVE: {because}" not in said:  # the same for every run
            said.append(f"INCONCLUSIVE: {because}")
    if results:
        said.append(_verify_legend(results[0]))
    if curves:
        said += ["loss per epoch:", *curves]
    return _render(table, said, width)


def _verify_cells(r: Result, facts: dict[str, Any]) -> list[str]:
    """final loss, accuracy, its difference, the largest loss deviation, the verdict"""
    if r.status != "ok" or "loss_curve" not in facts:
        return ["—"] * 4 + [_verdict(r, facts)]
    diff, gap = facts.get("accuracy_diff_points"), facts.get("max_loss_deviation")
    return [
        _loss(facts["loss_curve"][-1]),
        f"{facts['accuracy']:.1%}",
        "baseline" if facts.get("is_baseline") else _signed(diff, " points"),
        "—" if gap is None else f"{gap:.1%}",
        _verdict(r, facts),
    ]


def _verify_legend(first: Result) -> str:
    facts = first.verification or {}
    optimizer = f" with {facts['optimizer']}" if "optimizer" in facts else ""
    return (
        f"{facts.get('data', 'digits')}; {facts.get('epochs', '?')} epochs at batch "
        f"{first.spec.batch_size}{optimizer}, the same initial weights and batch order on every "
        "run; loss = mean training loss of the epoch; loss deviation = difference from CPU "
        "fp32's loss at the same epoch, as a fraction of CPU fp32's first-epoch loss; "
        f"tolerances: {facts.get('tolerance_points', 0):g} accuracy points, final loss "
        f"{facts.get('loss_tolerance', 0):.0%}"
    )


def _loss(x: float | None) -> str:
    return "not finite" if x is None else f"{x:.4g}"


def _signed(x: float | None, unit: str) -> str:
    return "—" if x is None else f"{x:+.1f}{unit}"


def _verdict(r: Result, facts: dict[str, Any]) -> str:
    if r.status != "ok":
        return f"{r.status.upper()}: {r.error}"
    verdict = str(facts.get("verdict", "?"))
    reasons = "; ".join(facts.get("reasons", []))
    if verdict == "diverges":
        return f"DIVERGES: {reasons}"
    if verdict == "inconclusive":  # why is said once, below the table
        return f"INCONCLUSIVE (differs anyway: {reasons})" if reasons else "INCONCLUSIVE"
    return verdict
