"""What the HTML and Markdown reports share: a comparison row's cells, and which results failed."""

from __future__ import annotations

from collections.abc import Sequence

from ..analysis.compare import Row
from ..core.result import Result
from ..levers import label

__all__ = ["HEADERS", "RESULT_COLUMNS", "failures", "row_cells"]

# The columns every table of measured results starts from (the stored list adds its own)
RESULT_COLUMNS = ("workload", "device", "model", "configuration", "it/s", "95% CI", "samples/s")
HEADERS = (*RESULT_COLUMNS, "vs CPU [95% CI]")


def row_cells(row: Row) -> list[str]:
    """A comparison's row as text: the figures, and its speedup against the CPU baseline."""
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


def failures(results: Sequence[Result]) -> list[Result]:
    """Results that failed or were unsupported. Verify results carry no measurement either,
    but they are not failures of a benchmark."""
    return [r for r in results if r.measurement is None and r.facts.verification is None]
