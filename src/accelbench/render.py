"""Console renderers. Each returns a string; printing happens in the CLI."""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import replace

from rich.console import Console
from rich.table import Table

from .devices import Device
from .results import Result
from .stats import Summary
from .workloads import Workload

__all__ = ["devices_table", "results_table", "run_tables", "workloads_table", "format_bytes"]


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


def _run_table(workload: str, results: Sequence[Result], width: int) -> str:
    table = Table(title=f"accelbench: {workload}", title_justify="left")
    headers = (
        "device",
        "model",
        "configuration",
        "it/s",
        "IQR",
        "95% CI",
        "samples/s",
        "step time",
        "peak memory",
        "first it",
        "vs CPU",
    )
    for header in headers:
        table.add_column(header, justify="left" if header in headers[:3] else "right")
    cpu = {
        replace(r.spec, device="cpu"): r.measurement.rate.median
        for r in results
        if r.spec.device == "cpu" and r.measurement
    }
    notes: dict[str, list[str]] = {}  # note -> the configurations it is about
    for r in results:
        m = r.measurement
        who = f"{r.spec.device} {r.spec.label}"
        head = (r.spec.device, r.environment.get("device_model", ""), r.spec.label)
        if m is None:
            table.add_row(*head, r.status.upper(), *[""] * 7)
            notes.setdefault(f"{r.status}: {r.error}", []).append(who)
            continue
        baseline = cpu.get(replace(r.spec, device="cpu"))
        table.add_row(
            *head,
            _num(m.rate.median),
            _num(m.rate.iqr),
            _ci(m.rate),
            _num(m.rate.median * r.samples_per_block),
            format_seconds(m.time.median / r.spec.steps_per_block),
            format_bytes(r.peak_memory),
            format_seconds(m.warmup[0]) if m.warmup else "—",
            f"{m.rate.median / baseline:.2f}x" if baseline else "—",
        )
        for note in [
            *m.warnings,
            r.environment.get("caveat", ""),
            f"peak memory is the {r.peak_memory_meaning}",
        ]:
            if note:
                notes.setdefault(note, []).append(who if note in m.warnings else r.spec.device)
    lines = [_legend(results)]
    for note, whos in notes.items():
        unique = list(dict.fromkeys(whos))
        lines.append(f"{'all' if len(whos) == len(results) else '; '.join(unique)}: {note}")
    return _render(table, lines, width)


def _legend(results: Sequence[Result]) -> str:
    if not any(r.measurement for r in results):
        return ""
    return (
        "it = the workload's steps per it on one fixed batch; it/s is the median over timed its "
        "(warm-up excluded), the device synchronized at each it's boundaries; IQR and a "
        "distribution-free 95% CI of the median; step time = median it time / steps per it; "
        "first it = the first warm-up it (compilation, autotuning); vs CPU = ratio of medians "
        "against the same configuration on the CPU."
    )


def results_table(results: Sequence[Result], width: int = 120) -> str:
    table = Table(title=f"{len(results)} stored result(s), newest first", title_justify="left")
    for header in (
        "id",
        "when (UTC)",
        "workload",
        "device",
        "model",
        "it/s",
        "95% CI",
        "samples/s",
        "status",
        "host",
    ):
        table.add_column(header)
    for r in results:
        m = r.measurement
        table.add_row(
            str(r.id),
            r.created_at.replace("T", " ").removesuffix("+00:00"),
            r.spec.workload,
            r.spec.device,
            r.environment.get("device_model", ""),
            r.spec.label,
            _num(m.rate.median) if m else "—",
            _ci(m.rate) if m else "—",
            _num(m.rate.median * r.samples_per_block) if m else "—",
            r.status if r.status == "ok" else f"{r.status}: {r.error}",
            r.environment.get("host", ""),
        )
    return _render(table, width=width)


def devices_table(devices: Sequence[Device], width: int = 120) -> str:
    table = Table(title="devices PyTorch can see from here", title_justify="left")
    for header in ("device", "available", "model", "memory", "precisions", "details"):
        table.add_column(header)
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
    table = Table(title="workloads", title_justify="left")
    for header in ("name", "batch", "input shape", "steps per it", "default its", "description"):
        table.add_column(header)
    for w in workloads:
        table.add_row(
            w.name,
            str(w.batch_size),
            "x".join(map(str, w.input_shape)),
            str(w.steps_per_block),
            str(w.default_blocks),
            w.description,
        )
    return _render(table, width=width)
