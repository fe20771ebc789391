"""A Markdown table for a forum post or an issue: one row per result, CPU as the baseline."""

from __future__ import annotations

from collections.abc import Sequence

from ..compare import compare
from ..results import Result

__all__ = ["markdown_report"]


def _cell(text: object) -> str:
    # Pipes and line breaks would break the table; escape the one, flatten the other.
    return str(text).replace("|", "\\|").replace("\n", " ")


def markdown_report(results: Sequence[Result]) -> str:
    comparison = compare(results, "device")
    lines = [
        "| workload | device | model | configuration | it/s | 95% CI | samples/s | vs CPU |",
        "|---|---|---|---|---:|---:|---:|---:|",
    ]
    for row in comparison.rows:
        r, m = row.result, row.result.measurement
        assert m is not None
        ci = f"{m.rate.ci_low:.4g}–{m.rate.ci_high:.4g}" if m.rate.ci_low is not None else "n/a"
        versus = row.speedup.text() if row.speedup else ("1.00x" if row.baseline is r else "—")
        cells = [
            r.spec.workload,
            row.value,
            r.environment.get("device_model", ""),
            r.spec.label,
            f"{m.rate.median:.4g}",
            ci,
            f"{(r.samples_per_second or 0):,.0f}",
            versus,
        ]
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    failed = [r for r in results if r.measurement is None]
    for r in failed:
        lines.append(
            f"\n- {_cell(r.spec.workload)} on {_cell(r.spec.device)} "
            f"({_cell(r.spec.label)}): {_cell(r.status)}: {_cell(r.error)}"
        )
    lines.append(
        "\nit/s: median over timed its; 95% CI of the median (distribution-free); "
        "vs CPU: ratio of medians with a bootstrap 95% CI, (n.s.) = not significant. "
        "Made by accelbench."
    )
    return "\n".join(lines) + "\n"
