"""Stored results as CSV, one row a result, for pandas and spreadsheets (`results export
--format csv`).

The columns: the result's identity (id, uid, when, sweep), the spec's fields and every lever's
value, then status and error, the median it/s with its 95% CI, the median samples/s, the number
of timed samples and of processes, the spread between and within processes (relative sds), the
result's caveats (analysis/trust, joined by " | "), and where it ran (host, machine, device
model). A result without a measurement
(a failure, a verify run) leaves the figures empty. Numbers are written in full precision, so
they read back equal.

A text cell that a spreadsheet would take for a formula (one starting with =, +, -, @, a tab or
a carriage return: a hostile model name, say) is written with a leading apostrophe, as OWASP
advises; that is the one change a value can undergo.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from typing import Any

from ..analysis.trust import trust_of
from ..core.result import Result, machine_of
from ..levers import spec_json

__all__ = ["CSV_FIGURES", "results_csv"]

_IDENTITY = ("id", "uid", "created_at", "sweep")
CSV_FIGURES = (
    "status",
    "error",
    "it_per_s_median",
    "it_per_s_ci95_low",
    "it_per_s_ci95_high",
    "samples_per_s_median",
    "samples",
    "processes",
    "between_process_sd",
    "within_process_sd",
    "caveats",
    "host",
    "machine",
    "device_model",
)
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def results_csv(results: Sequence[Result]) -> str:
    """The results as CSV text with a header row; spec columns as the levers registry names
    them, plus any lever a result stored that this process has not registered."""
    specs = [spec_json(r.spec) for r in results]
    spec_columns = list(dict.fromkeys(key for spec in specs for key in spec))
    buffer = io.StringIO()
    writer = csv.DictWriter(
        buffer, fieldnames=[*_IDENTITY, *spec_columns, *CSV_FIGURES], lineterminator="\n"
    )
    writer.writeheader()
    for result, spec in zip(results, specs, strict=True):
        row = {**_identity(result), **spec, **_figures(result)}
        writer.writerow({key: _cell(value) for key, value in row.items()})
    return buffer.getvalue()


def _identity(r: Result) -> dict[str, Any]:
    return {"id": r.id, "uid": r.uid, "created_at": r.created_at, "sweep": r.sweep}


def _figures(r: Result) -> dict[str, Any]:
    m = r.measurement
    rate = m.rate if m else None
    spread = m.spread if m else None
    return {
        "status": r.status,
        "error": r.error,
        "it_per_s_median": rate.median if rate else None,
        "it_per_s_ci95_low": rate.ci_low if rate else None,
        "it_per_s_ci95_high": rate.ci_high if rate else None,
        "samples_per_s_median": r.samples_per_second,
        "samples": len(m.samples) if m else None,
        "processes": m.processes if m else None,
        "between_process_sd": spread.between if spread else None,
        "within_process_sd": spread.within if spread else None,
        "caveats": " | ".join(trust_of(r).texts),
        "host": r.environment.get("host", ""),
        "machine": machine_of(r.environment),
        "device_model": r.environment.get("device_model", ""),
    }


def _cell(value: Any) -> Any:
    """None as an empty cell; a text that would run as a formula, defused."""
    if value is None:
        return ""
    if isinstance(value, str) and value.startswith(_FORMULA_STARTS):
        return "'" + value
    return value
