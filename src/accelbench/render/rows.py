"""The cells of one comparison row, shared by the HTML and Markdown reports."""

from __future__ import annotations

from typing import Any

from ..levers import label

HEADERS = (
    "workload",
    "device",
    "model",
    "configuration",
    "it/s",
    "95% CI",
    "samples/s",
    "vs CPU [95% CI]",
)


def row_cells(row: Any) -> list[str]:
    """A compare.Row as text: the figures, and its speedup against the CPU baseline."""
    r, m = row.result, row.result.measurement
    assert m is not None
    ci = f"{m.rate.ci_low:.4g}–{m.rate.ci_high:.4g}" if m.rate.ci_low is not None else "n/a"
    versus = row.speedup.text() if row.speedup else ("baseline" if row.baseline is r else "—")
    return [
        r.spec.workload,
        row.value,
        r.environment.get("device_model", ""),
        label(r.spec),
        f"{m.rate.median:.4g}",
        ci,
        f"{r.samples_per_second or 0:,.0f}",
        versus,
    ]
