"""A Markdown table for a forum post or an issue: one row per result, CPU as the baseline."""

from __future__ import annotations

from collections.abc import Sequence

from ..analysis.compare import DEVICE, compare
from ..analysis.explanation import Explanation
from ..core.result import Result
from ..engine.facts import P99_MIN_SAMPLES
from ..levers import label
from .console.explain import explanation_lines
from .rows import (
    EXPLAINED,
    HEADERS,
    LATENCY_HEADER,
    TABLE_ROWS,
    caveat_lines,
    failures,
    informative,
    row_cells,
)
from .text import inert

__all__ = ["markdown_report"]


def _cell(text: object) -> str:
    """Stored text as one table cell: CR, LF and other control characters shown as escapes
    (a raw one would end the row or reach the terminal), a pipe escaped (it would split it)."""
    return inert(text).replace("|", "\\|")


# What each column's words mean, said once under the table (the columns shown only)
_WORDS = {
    "id": "the result's id in the store, as the charts label it",
    "samples/s": "median it/s x samples in an it (for generate, tokens: batch x new tokens)",
    "95% CI": "of that samples/s (over several processes, Student's t across their medians; "
    "in one, distribution-free within it)",
    "it/s": "median over timed its (over several processes, the geometric mean of their medians)",
    LATENCY_HEADER: "per-request latency, the configuration at batch 1 with each step timed "
    f"alone (p99 needs {P99_MIN_SAMPLES} steps)",
    "vs CPU [95% CI]": "ratio of median samples/s with a 95% CI taken process by process, "
    "(n.s.) = the interval holds 1",
}


def markdown_report(results: Sequence[Result]) -> str:
    comparison = compare(results, DEVICE, within_sweep=True)
    rows = [row_cells(row) for row in comparison.rows[:TABLE_ROWS]]
    kept, dropped = informative(HEADERS, rows)
    shown = [HEADERS[i] for i in kept]
    text = sum(1 for h in shown if h in ("id", "workload", "device", "model", "configuration"))
    align = "|" + "---|" * text + "---:|" * (len(shown) - text)  # text, then figures
    lines = ["| " + " | ".join(shown) + " |", align]
    lines.extend("| " + " | ".join(_cell(row[i]) for i in kept) + " |" for row in rows)
    if len(comparison.rows) > TABLE_ROWS:
        lines.append(
            f"\nThe first {TABLE_ROWS} of {len(comparison.rows):,} results; narrow it with "
            "--workload, --device, --sweep or --host."
        )
    if dropped:
        lines.append(f"\nLeft out, the same on every row: {_cell('; '.join(dropped))}.")
    caveats = caveat_lines(results)
    if caveats:
        lines.append("\n**Caveats**\n")
        lines.extend(f"- {_cell(line)}" for line in caveats[:TABLE_ROWS])
    for r in failures(results)[:TABLE_ROWS]:
        lines.append(
            f"\n- {_cell(r.spec.workload)} on {_cell(r.spec.device)} "
            f"({_cell(label(r.spec))}): {_cell(r.status)}: {_cell(r.error)}"
        )
    lines.extend(_explanations(results))
    words = "; ".join(f"{h}: {_WORDS[h]}" for h in shown if h in _WORDS)
    lines.append(f"\n{words}. Made by accelbench.")
    return "\n".join(lines) + "\n"


def _explanations(results: Sequence[Result]) -> list[str]:
    """A section for each profiled result: the console's explanation lines as a list."""
    out = []
    for r in [r for r in results if r.facts.get(Explanation) is not None][:EXPLAINED]:
        head = f"{r.spec.workload} on {r.spec.device} ({label(r.spec)})"
        out.append(f"\n**Why: {_cell(head)}**\n")
        out.extend(f"- {_cell(line)}" for line in explanation_lines(r))
    return out
