"""Console renderers. Each returns a string; printing happens in the CLI."""

from __future__ import annotations

import io
from collections.abc import Sequence

from rich.console import Console
from rich.table import Table

from .devices import Device
from .results import Result
from .stats import Summary
from .workloads import Workload

__all__ = ["devices_table", "results_table", "run_table", "workloads_table", "format_bytes"]


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


def run_table(results: Sequence[Result], width: int = 120) -> str:
    """Seed 000's table, done right: one row per device, CPU as the baseline."""
    table = Table(title=_title(results), title_justify="left")
    for header in (
        "device",
        "model",
        "it/s",
        "IQR",
        "95% CI",
        "samples/s",
        "step time",
        "peak memory",
        "vs CPU",
    ):
        table.add_column(header, justify="left" if header in ("device", "model") else "right")
    cpu = {
        r.spec.workload: r.measurement.rate.median
        for r in results
        if r.spec.device == "cpu" and r.measurement
    }
    notes: list[str] = []
    for r in results:
        m = r.measurement
        model = r.environment.get("device_model", "")
        if m is None:
            table.add_row(r.spec.device, model, r.status.upper(), "", "", "", "", "", "")
            notes.append(f"{r.spec.device}: {r.status}: {r.error}")
            continue
        baseline = cpu.get(r.spec.workload)
        table.add_row(
            r.spec.device,
            model,
            _num(m.rate.median),
            _num(m.rate.iqr),
            _ci(m.rate),
            _num(m.rate.median * r.samples_per_block),
            format_seconds(m.time.median / r.spec.steps_per_block),
            format_bytes(r.peak_memory),
            f"{m.rate.median / baseline:.2f}x" if baseline else "—",
        )
        notes += [f"{r.spec.device}: {w}" for w in m.warnings]
        if r.environment.get("caveat"):
            notes.append(f"{r.spec.device}: {r.environment['caveat']}")
        notes.append(
            f"{r.spec.device}: peak memory is the {r.peak_memory_meaning}; "
            f"first (warm-up) it took {', '.join(format_seconds(w) for w in m.warmup)}"
        )
    return _render(table, [_legend(results)] + notes, width)


def _title(results: Sequence[Result]) -> str:
    names = sorted({r.spec.workload for r in results})
    return f"accelbench: {', '.join(names)} (train)"


def _legend(results: Sequence[Result]) -> str:
    r = next((r for r in results if r.measurement), None)
    if r is None or r.measurement is None:
        return ""
    return (
        f"it = {r.spec.steps_per_block} training step(s) on a batch of {r.spec.batch_size}; "
        f"median of {len(r.measurement.samples)} timed its after {len(r.measurement.warmup)} "
        "warm-up, the device synchronized at each boundary; IQR and a distribution-free 95% CI "
        "of the median; step time = median it time / steps per it; vs CPU = ratio of medians."
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
