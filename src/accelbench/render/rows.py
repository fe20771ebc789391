"""What the HTML and Markdown reports share: a comparison row's cells, and which results failed."""

from __future__ import annotations

from collections.abc import Sequence

from ..analysis.compare import Row
from ..core.result import Result
from ..levers import label
from .text import interval, number

__all__ = ["HEADERS", "RESULT_COLUMNS", "failures", "row_cells"]

# The columns every table of measured results starts from (the stored list adds its own)
RESULT_COLUMNS = ("workload", "device", "model", "configuration", "it/s", "95% CI", "samples/s")
HEADERS = (*RESULT_COLUMNS, "vs CPU [95% CI]")


def row_cells(row: Row) -> list[str]:
    """A comparison's row as text: the figures, and its speedup against the CPU baseline."""
    r, m = row.result, row.result.measurement
    assert m is not None
    versus = row.speedup.text() if row.speedup else ("baseline" if row.baseline is r else "—")
    return [
        r.spec.workload,
        row.value,
        r.environment.get("device_model", ""),
        label(r.spec),
        number(m.rate.median),  # as the console prints it: 13,645, not 1.364e+04
        interval(m.rate),
        f"{r.samples_per_second or 0:,.0f}",
        versus,
    ]


def failures(results: Sequence[Result]) -> list[Result]:
    """Results that failed or were unsupported. Verify results carry no measurement either,
    but they are not failures of a benchmark."""
    return [r for r in results if r.measurement is None and r.facts.verification is None]
