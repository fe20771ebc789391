"""One self-contained HTML file: each machine's environment, the comparison tables, and charts.

Nothing is loaded from the network when the page is opened: styles are inline and charts are
PNG images embedded as data URIs. Every string taken from results (model names, host names,
error messages) goes through `html.escape`, so a hostile name shows as text and runs nothing, and
through `inert`, so no control character reaches whoever reads the file in a terminal.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterable, Sequence
from html import escape

from ..analysis.compare import DEVICE, compare
from ..core.metrics import P99_MIN_SAMPLES
from ..core.result import Result, machine_of, utc_now
from ..core.version import __version__
from ..levers import label
from . import charts
from .console.explain import explanation_lines
from .rows import HEADERS, LATENCY_HEADER, failures, row_cells
from .text import format_seconds, inert

__all__ = ["html_report"]

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; max-width: 1200px; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
th { background: #f2f2f2; }
.ns { color: #888; }
.failed { color: #a00; }
img { max-width: 100%; border: 1px solid #eee; margin-bottom: 1.5em; }
"""

_CHARTS: tuple[tuple[str, Callable[[Sequence[Result]], bytes | None]], ...] = (
    ("Throughput per device and workload", charts.throughput_chart),
    ("Speedup ladder of the optimizations", charts.ladder_chart),
    ("accelbench optimize: speedup and drift per variant", charts.optimize_chart),
    ("Peak memory", charts.memory_chart),
    ("Scaling with batch size", charts.scaling_chart),
    ("Scaling with data-parallel processes", charts.parallel_chart),
    ("Where the step's time went", charts.explain_chart),
)


def html_report(results: Sequence[Result], title: str = "accelbench report") -> str:
    sections = [
        f"<h1>{escape(title)}</h1>",
        f"<p>{len(results)} result(s), made {escape(utc_now())} by accelbench "
        f"{escape(__version__)}.</p>",
        _machines(results),
        _comparisons(results),
        _charts(results),
        _explanations(results),
        _failures(results),
    ]
    body = "\n".join(s for s in sections if s)
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape(title)}</title><style>{_STYLE}</style></head>\n<body>\n{body}\n"
        "</body></html>\n"
    )


def _text(text: str) -> str:
    """Stored text as HTML that shows it: escaped, its control characters visible."""
    return escape(inert(text))


def _table(headers: Iterable[str], rows: Iterable[Iterable[tuple[str, str]]]) -> str:
    """Rows of (text, css class) cells; all text is escaped here."""
    head = "".join(f"<th>{_text(h)}</th>" for h in headers)
    body = "".join(
        "<tr>" + "".join(f'<td class="{c}">{_text(t)}</td>' for t, c in row) + "</tr>"
        for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _machines(results: Sequence[Result]) -> str:
    facts: dict[str, dict[str, str]] = {}
    devices: dict[str, set[str]] = {}
    for r in results:
        machine = machine_of(r.environment)
        facts.setdefault(machine, {}).update(r.environment)
        model = r.environment.get("device_model", "?")
        devices.setdefault(machine, set()).add(f"{r.spec.device}: {model}")
    parts = ["<h2>Machines</h2>"]
    for machine, known in sorted(facts.items()):
        shown = {**known, "devices": "; ".join(sorted(devices[machine]))}
        rows = [
            [(k, ""), (str(v), "")]
            for k, v in sorted(shown.items())
            if k not in ("device", "device_model", "caveat")
        ]
        parts.append(f"<h3>{_text(machine)}</h3>" + _table(("fact", "value"), rows))
    return "\n".join(parts)


def _comparisons(results: Sequence[Result]) -> str:
    comparison = compare(results, DEVICE)
    rows = []
    for row in comparison.rows:
        cells = row_cells(row)
        classes = ["", "", "", "", *["num"] * (len(cells) - 4)]
        if row.speedup and not row.speedup.significant:
            classes[-1] = "num ns"
        bottleneck = row.result.facts.bottleneck
        verdict = bottleneck.kind if bottleneck else ""
        rows.append([*zip(cells, classes, strict=True), (verdict, "")])
    headers = (*HEADERS, "verdict")
    note = (
        "<p>it/s: median over timed its, with the distribution-free 95% CI of the median. "
        "vs CPU: ratio of median samples/s against the same configuration on the CPU, with a "
        "bootstrap "
        "95% CI from the raw samples; (n.s.) marks a difference the interval cannot tell from "
        f"none. {LATENCY_HEADER}: per-request latency, the configuration at batch 1 with each "
        f"step timed alone (p99 needs {P99_MIN_SAMPLES} steps).</p>"
    )
    return "<h2>Results</h2>" + note + _table(headers, rows)


def _charts(results: Sequence[Result]) -> str:
    parts = ["<h2>Charts</h2>"]
    for title, draw in _CHARTS:
        png = draw(results)
        if png is None:
            continue
        data = base64.b64encode(png).decode("ascii")
        parts.append(
            f'<h3>{escape(title)}</h3><img class="chart" alt="{escape(title)}" '
            f'src="data:image/png;base64,{data}">'
        )
    return "\n".join(parts) if len(parts) > 1 else ""


def _failures(results: Sequence[Result]) -> str:
    failed = failures(results)
    if not failed:
        return ""
    rows = [
        [
            (r.spec.workload, ""),
            (r.spec.device, ""),
            (label(r.spec), ""),
            (r.status, "failed"),
            (r.error, ""),
        ]
        for r in failed
    ]
    return "<h2>Failed or unsupported</h2>" + _table(
        ("workload", "device", "configuration", "status", "message"), rows
    )


def _explanations(results: Sequence[Result]) -> str:
    """Each profiled configuration's explanation, and its top operators as a table."""
    parts = []
    for r in results:
        found = r.facts.explanation
        if found is None:
            continue
        time = "device" if found.busy_share is not None else "host"
        rows = [
            [
                (o.name, ""),
                (format_seconds(o.device_s if time == "device" else o.host_s), "num"),
                (f"{(o.device_s if time == 'device' else o.host_s) / found.step_s:.1%}", "num"),
                (f"{o.calls:g}", "num"),
            ]
            for o in found.top_operators
        ]
        head = f"{r.spec.workload} on {r.spec.device} ({label(r.spec)})"
        lines = "".join(f"<li>{_text(line)}</li>" for line in explanation_lines(r))
        table = _table(
            ("operator", f"{time} time a step", "share of the step", "calls a step"), rows
        )
        parts.append(f"<h3>{_text(head)}</h3><ul>{lines}</ul>{table}")
    if not parts:
        return ""
    return "<h2>Where the step's time went</h2>" + "\n".join(parts)
