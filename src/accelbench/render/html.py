"""One self-contained HTML file: per workload the fastest configuration first, by how much, with
its caveats; then each machine's environment, the comparison table (columns that say nothing on
these results left out, and said so), every caveat, and charts.

It is bounded whatever the results (10,000 once took 261 s and 3.1 GB): the summary has a row
per workload and mode, the table and the lists their first TABLE_ROWS rows (the page says how
many more, and how to see them), the charts their bounds (render/charts).

Nothing is loaded from the network when the page is opened: styles are inline and charts are
PNG images embedded as data URIs. Every string taken from results (model names, host names,
error messages) goes through `html.escape`, so a hostile name shows as text and runs nothing, and
through `inert`, so no control character reaches whoever reads the file in a terminal.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterable, Sequence
from html import escape

from ..analysis.compare import DEVICE, Speedup, compare
from ..analysis.explanation import Explanation
from ..analysis.facts import Verification
from ..analysis.trust import trust_of
from ..analysis.verdict import Bottleneck
from ..core.result import Result, machine_of, utc_now
from ..core.version import __version__
from ..engine.facts import P99_MIN_SAMPLES
from ..levers import label
from . import charts
from .console.explain import explanation_lines
from .console.verify import VERIFY_HEADERS, verify_cells
from .load_chart import latency_chart
from .rows import (
    EXPLAINED,
    HEADERS,
    LATENCY_HEADER,
    TABLE_ROWS,
    Best,
    best_of,
    caveat_lines,
    device_namer,
    failures,
    informative,
    refusal,
    row_cells,
    samples_cell,
)
from .text import format_seconds, inert, interval

__all__ = ["html_report"]

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; max-width: 1200px; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
th { background: #f2f2f2; }
.ns { color: #888; }
td.caveats { font-size: 0.9em; color: #555; border-top: none; }
td.caveats ul { margin: 0.2em 0 0.2em 1.2em; padding: 0; }
.failed { color: #a00; }
img { max-width: 100%; border: 1px solid #eee; margin-bottom: 1.5em; }
"""

# A table cell: its text (or lines of text) and its css class
Cell = tuple[str | Sequence[str], str]

# Every word of the results table's columns, said once.
_WORDS = (
    (
        "id",
        "the result's id in the store (`accelbench results`); each chart labels its bars with it",
    ),
    ("workload", "the model and its data (`accelbench workloads` lists them)"),
    (
        "device",
        "where it ran, as PyTorch names it; machine/device when the results come from "
        "several machines",
    ),
    ("model", "what the device calls itself"),
    (
        "configuration",
        "train (forward, loss, backward, optimizer step) or infer; the precision "
        "(fp32 with TF32 off, tf32, fp16 or bf16 autocast); bN the batch size; then each "
        "optimization switched on",
    ),
    (
        "samples/s",
        "the median it/s times the samples in an it; for generate rows, tokens/s: an it is "
        "one generation of batch x new tokens",
    ),
    (
        "95% CI",
        "the 95% confidence interval of that samples/s: over several processes, Student's t "
        "across their medians, so it holds when the command is run again; in one process, "
        "the distribution-free interval of its samples, which holds within that process only",
    ),
    (
        "it/s",
        "its per second, the median over the timed its (warm-up excluded; the device "
        "synchronized at each it's boundaries); an it is the workload's steps on one batch. "
        "Over several processes, the geometric mean of the processes' medians",
    ),
    (
        "vs CPU",
        "the ratio of median samples/s against the same configuration on the CPU of the "
        "same machine, measured in the same sweep (side by side), with a 95% CI taken "
        "process by process (analysis/compare); (n.s.): the interval holds 1, so no "
        "difference can be told",
    ),
    (
        LATENCY_HEADER,
        "per-request latency: the configuration at batch 1, each step timed alone after "
        f"warm-up; its median, 90th and 99th percentiles (p99 needs {P99_MIN_SAMPLES} steps; "
        "inference only)",
    ),
    (
        "verdict",
        "what bounds the step: launch-bound (the device waits on the host: the step "
        "time hardly grows with the batch, or the profile shows the device idle), compute-bound "
        "(a high share of the peak FLOP/s), memory-bound (too few FLOPs per byte moved for the "
        "device's ridge point, or a low MFU), undetermined (the data cannot tell: no smaller-batch "
        "timing, no peak figures, or a machine too noisy; the caveats say which)",
    ),
)


def _legend(headers: Iterable[str]) -> str:
    """The words of the columns shown, each once."""
    shown = {h.split(" [")[0] for h in headers}  # "vs CPU [95% CI]" is explained as "vs CPU"
    return (
        "<dl>"
        + "".join(
            f"<dt><b>{escape(word)}</b></dt><dd>{escape(meaning)}</dd>"
            for word, meaning in _WORDS
            if word in shown
        )
        + "</dl>"
    )


_CHARTS: tuple[tuple[str, Callable[[Sequence[Result]], bytes | None]], ...] = (
    ("Throughput per device and workload", charts.throughput_chart),
    ("Speedup ladder of the optimizations", charts.ladder_chart),
    ("accelbench optimize: speedup and drift per variant", charts.optimize_chart),
    ("Peak memory", charts.memory_chart),
    ("Scaling with batch size", charts.scaling_chart),
    ("Scaling with data-parallel processes", charts.parallel_chart),
    ("Where the step's time went", charts.explain_chart),
    ("Serving: latency against load (LoadGen's Server runs)", latency_chart),
    (
        "History: each configuration's runs on a machine, with the band each should land in "
        "(95% prediction from the runs before it) and the gate's verdict where one fell outside "
        f"(threshold {charts.GATE_THRESHOLD:.0%})",
        charts.history_chart,
    ),
)


def html_report(results: Sequence[Result], title: str = "accelbench report") -> str:
    sections = [
        f"<h1>{escape(title)}</h1>",
        f"<p>{_counts(results)} Made {escape(utc_now())} by accelbench {escape(__version__)}.</p>",
        _summary(results),
        _machines(results),
        _comparisons(results),
        _caveats(results),
        _charts(results),
        _explanations(results),
        _verifications(results),
        _failures(results),
    ]
    body = "\n".join(s for s in sections if s)
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape(title)}</title><style>{_STYLE}</style></head>\n<body>\n{body}\n"
        "</body></html>\n"
    )


def _counts(results: Sequence[Result]) -> str:
    """What the page holds, so the header adds up with the tables below it."""
    rows = len(compare(results, DEVICE, within_sweep=True).rows)
    failed = len(failures(results))
    measured = sum(1 for r in results if r.measurement is not None)
    other = len(results) - measured - failed
    parts = [f"{len(results)} results: {rows} measured in the results table"]
    if measured > rows:
        parts.append(
            f"{measured - rows} older measurements of the same configuration in the "
            "same sweep not shown"
        )
    if failed:
        parts.append(f"{failed} failed or unsupported, listed at the end")
    if other:
        parts.append(f"{other} verify results (no timing), listed under Verification")
    return escape("; ".join(parts) + ".")


def _text(text: str) -> str:
    """Stored text as HTML that shows it: escaped, its control characters visible."""
    return escape(inert(text))


def _lines(text: str | Sequence[str]) -> str:
    """A cell's text, or its lines one under another; escaped."""
    return _text(text) if isinstance(text, str) else "<br>".join(_text(t) for t in text)


def _table(headers: Iterable[str], rows: Iterable[Iterable[Cell]]) -> str:
    """Rows of (text, css class) cells; all text is escaped here."""
    head = "".join(f"<th>{_text(h)}</th>" for h in headers)
    body = "".join(
        "<tr>" + "".join(f'<td class="{c}">{_lines(t)}</td>' for t, c in row) + "</tr>"
        for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _machines(results: Sequence[Result]) -> str:
    facts: dict[str, dict[str, str]] = {}
    devices: dict[str, set[str]] = {}
    for r in results:
        machine = machine_of(r.environment)
        facts.setdefault(machine, {}).update(r.environment)
        model = r.environment.get("device_model", "")
        if model and r.measurement is not None:  # a device that measured something
            devices.setdefault(machine, set()).add(f"{r.spec.device}: {model}")
    parts = ["<h2>Machines</h2>"]
    for machine, known in sorted(facts.items()):
        shown = {**known, "devices": "; ".join(sorted(devices.get(machine, ()))) or "none measured"}
        rows = [
            [(k, ""), (str(v), "")]
            for k, v in sorted(shown.items())
            if k not in ("device", "device_model", "caveat")
        ]
        parts.append(f"<h3>{_text(machine)}</h3>" + _table(("fact", "value"), rows))
    return "\n".join(parts)


def _summary(results: Sequence[Result]) -> str:
    """Per workload and mode, the fastest configuration on any device, how far ahead of the
    next fastest and the slowest other configuration, and under it its caveats."""
    found = best_of(results)[:TABLE_ROWS]
    if not found:
        return ""
    device = device_namer(results)
    rows = [_summary_row(b, device) for b in found]
    headers = ("workload", "mode", "fastest", "device", "samples/s", "95% CI",
               "over the next fastest", "over the slowest", "configurations")  # fmt: skip
    kept, dropped = informative(headers, [[_plain(t) for t, _ in row] for row in rows])
    head = "".join(f"<th>{_text(headers[i])}</th>" for i in kept)
    body = "".join(
        "<tr>"
        + "".join(f'<td class="{row[i][1]}">{_lines(row[i][0])}</td>' for i in kept)
        + f'</tr><tr><td class="caveats" colspan="{len(kept)}">{_its_caveats(b, results)}</td></tr>'
        for b, row in zip(found, rows, strict=True)
    )
    return (
        "<h2>Fastest configuration per workload</h2>"
        "<p>Each workload's fastest configuration on any device, and how many times the "
        "samples/s of the next fastest and of the slowest other configuration it ran (95% CI "
        "over processes; (n.s.): the interval holds 1, no difference can be told; "
        "no interval: too few processes or samples to bound it); under it, its caveats "
        "(every result's are under Caveats).</p>"
        f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
        + _left_out(dropped)
        + _more(len(best_of(results)), "workloads")
    )


def _summary_row(b: Best, device: Callable[[Result], str]) -> list[Cell]:
    m = b.best.measurement
    assert m is not None
    slowest = b.slowest if b.slowest is not b.next else None  # shown once, as the next
    fastest = label(b.best.spec)
    return [
        (b.workload, ""),
        (b.mode, ""),
        (f"#{b.best.id} {fastest}" if b.best.id is not None else fastest, ""),
        (device(b.best), ""),
        (samples_cell(b.best), "num"),
        (interval(m.rate, b.best.samples_per_block), "num"),
        (_lead(b.over(b.next), b.next, device), ""),
        (_lead(b.over(slowest), slowest, device), ""),
        (f"{b.configurations:,}", "num"),
    ]


def _its_caveats(b: Best, results: Sequence[Result]) -> str:
    """The fastest result's caveats, as a list: a search's refusal first."""
    refused = refusal(b.best, results)
    caveats = [*([refused] if refused else []), *trust_of(b.best).texts]
    if not caveats:
        return "its caveats: none"
    return "its caveats:<ul>" + "".join(f"<li>{_text(c)}</li>" for c in caveats) + "</ul>"


def _lead(
    found: Speedup | None, other: Result | None, device: Callable[[Result], str]
) -> str | tuple[str, str]:
    """How many times the other's samples/s the fastest ran, and which the other is."""
    if found is None or other is None:
        return "—"
    if found.no_interval:
        figure = f"{found.ratio:.2f}x (no interval)"
    else:
        mark = "" if found.significant else " (n.s.)"
        figure = f"{found.ratio:.2f}x [{found.low:.2f}–{found.high:.2f}]{mark}"
    ref = f"#{other.id} " if other.id is not None else ""
    return figure, f"over {ref}{label(other.spec)} on {device(other)}"


def _plain(text: str | Sequence[str]) -> str:
    return text if isinstance(text, str) else " ".join(text)


def _left_out(dropped: Sequence[str]) -> str:
    """The note under a table whose columns that said nothing were left out."""
    if not dropped:
        return ""
    return (
        "<p>Left out, saying nothing on these results (the same on every row): "
        + _text("; ".join(dropped))
        + ".</p>"
    )


def _more(total: int, what: str) -> str:
    """The note under a table cut at TABLE_ROWS."""
    if total <= TABLE_ROWS:
        return ""
    return (
        f"<p>The first {TABLE_ROWS} of {total:,} {escape(what)}; narrow the report with "
        "--workload, --device, --sweep or --host, or list them all with "
        "<code>accelbench results --json</code>.</p>"
    )


def _comparisons(results: Sequence[Result]) -> str:
    comparison = compare(results, DEVICE, within_sweep=True)
    headers = (*HEADERS, "verdict")
    rows: list[list[Cell]] = []
    for row in comparison.rows[:TABLE_ROWS]:
        cells = row_cells(row)
        classes = ["", "", "", "", "", *["num"] * (len(cells) - 5)]
        if row.speedup and not row.speedup.significant:
            classes[-1] = "num ns"
        bottleneck = row.result.facts.get(Bottleneck)
        verdict = bottleneck.kind if bottleneck else ""
        rows.append([*zip(cells, classes, strict=True), (verdict, "")])
    kept, dropped = informative(headers, [[_plain(t) for t, _ in row] for row in rows])
    shown = [headers[i] for i in kept]
    more = _more(len(comparison.rows), "results")
    table = _table(shown, [[row[i] for i in kept] for row in rows])
    return "<h2>Results</h2>" + table + _left_out(dropped) + more + _legend(shown)


def _caveats(results: Sequence[Result]) -> str:
    """What to know before trusting the figures above (analysis/trust)."""
    lines = caveat_lines(results)
    if not lines:
        return ""
    items = "".join(f"<li>{_text(line)}</li>" for line in lines[:TABLE_ROWS])
    return f"<h2>Caveats</h2><ul>{items}</ul>" + _more(len(lines), "caveats")


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
        for r in failed[:TABLE_ROWS]
    ]
    headers = ("workload", "device", "configuration", "status", "message")
    return (
        "<h2>Failed or unsupported</h2>"
        + _table(headers, rows)
        + _more(len(failed), "failed or unsupported results")
    )


def _verifications(results: Sequence[Result]) -> str:
    """The verify results the header counts: each run as `accelbench verify` shows it."""
    verified = [r for r in results if r.measurement is None and r.facts.get(Verification)]
    if not verified:
        return ""
    rows = [
        [(cell, "") for cell in (r.spec.workload, *verify_cells(r))]
        for r in verified[:TABLE_ROWS]
    ]
    return (
        "<h2>Verification</h2>"
        + _table(("workload", *VERIFY_HEADERS), rows)
        + _more(len(verified), "verify results")
    )


def _explanations(results: Sequence[Result]) -> str:
    """Each profiled configuration's explanation, and its top operators as a table (the newest
    EXPLAINED of them)."""
    parts = []
    for r in [r for r in results if r.facts.get(Explanation) is not None][:EXPLAINED]:
        found = r.facts.get(Explanation)
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
