"""A Markdown table for a forum post or an issue: one row per result, CPU as the baseline."""

from __future__ import annotations

from collections.abc import Sequence

from ..analysis.compare import DEVICE, compare
from ..core.metrics import P99_MIN_SAMPLES
from ..core.result import Result
from ..levers import label
from .console.explain import explanation_lines
from .rows import EXPLAINED, HEADERS, LATENCY_HEADER, TABLE_ROWS, caveat_lines, failures, row_cells
from .text import inert

__all__ = ["markdown_report"]


def _cell(text: object) -> str:
    """Stored text as one table cell: CR, LF and other control characters shown as escapes
    (a raw one would end the row or reach the terminal), a pipe escaped (it would split it)."""
    return inert(text).replace("|", "\\|")


def markdown_report(results: Sequence[Result]) -> str:
    comparison = compare(results, DEVICE, within_sweep=True)
    align = "|---|---|---|---|" + "---:|" * (len(HEADERS) - 4)  # text, then figures
    lines = ["| " + " | ".join(HEADERS) + " |", align]
    for row in comparison.rows[:TABLE_ROWS]:
        lines.append("| " + " | ".join(_cell(c) for c in row_cells(row)) + " |")
    if len(comparison.rows) > TABLE_ROWS:
        lines.append(
            f"\nThe first {TABLE_ROWS} of {len(comparison.rows):,} results; narrow it with "
            "--workload, --device, --sweep or --host."
        )
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
    lines.append(
        "\nsamples/s: median it/s x samples in an it (for generate, tokens: batch x new "
        "tokens); 95% CI of that samples/s (over several processes, Student's t across their "
        "medians; in one, distribution-free within it); it/s: median over timed its (over "
        "several processes, the geometric mean of their medians); "
        f"{LATENCY_HEADER}: per-request latency, the configuration at batch 1 with each step "
        f"timed alone (p99 needs {P99_MIN_SAMPLES} steps); "
        "vs CPU: ratio of median samples/s with a 95% CI taken process by process, (n.s.) = "
        "the interval holds 1. "
        "Made by accelbench."
    )
    return "\n".join(lines) + "\n"


def _explanations(results: Sequence[Result]) -> list[str]:
    """A section for each profiled result: the console's explanation lines as a list."""
    out = []
    for r in [r for r in results if r.facts.explanation is not None][:EXPLAINED]:
        head = f"{r.spec.workload} on {r.spec.device} ({label(r.spec)})"
        out.append(f"\n**Why: {_cell(head)}**\n")
        out.extend(f"- {_cell(line)}" for line in explanation_lines(r))
    return out
