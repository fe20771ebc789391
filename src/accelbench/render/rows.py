"""What the reports share: a comparison row's cells, the latency's text, which results failed."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..analysis.compare import Row
from ..analysis.trust import trust_of
from ..core.metrics import P99_MIN_SAMPLES, Latency
from ..core.result import Result, machine_of
from ..core.vocab import GENERATE
from ..levers import label
from .text import format_seconds, interval, number

__all__ = [
    "EXPLAINED",
    "HEADERS",
    "TABLE_ROWS",
    "Best",
    "best_of",
    "caveat_lines",
    "LATENCY_HEADER",
    "RESULT_COLUMNS",
    "failures",
    "latency_cell",
    "latency_percentiles",
    "row_cells",
    "samples_cell",
    "samples_unit",
]

# A report is bounded whatever the results (10,000 once took 261 s): its tables and lists show
# this many rows and count the rest; this many profiled results' explanations.
TABLE_ROWS = 200
EXPLAINED = 20
# The columns every table of measured results starts from (the stored list adds its own)
# The interval sits on the figure users read, samples/s (tokens/s for generate)
RESULT_COLUMNS = ("workload", "device", "model", "configuration", "samples/s", "95% CI", "it/s")
LATENCY_HEADER = "latency b1 p50/p90/p99"
HEADERS = (*RESULT_COLUMNS, LATENCY_HEADER, "vs CPU [95% CI]")


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
        samples_cell(r),
        interval(m.rate, r.samples_per_block),
        number(m.rate.median),  # as the console prints it: 13,645, not 1.364e+04
        latency_cell(r),
        versus,
    ]


def samples_cell(r: Result) -> str:
    """The samples/s cell of a report's row."""
    return f"{r.samples_per_second or 0:,.0f}{samples_unit(r)}"


def samples_unit(r: Result) -> str:
    """What a samples/s cell adds: a generation's samples are its tokens, and it says so."""
    return " tokens/s" if r.spec.mode == GENERATE else ""


def latency_percentiles(found: Latency) -> tuple[str, str, str]:
    """p50, p90 and p99 as text; a p99 from too few steps is said to be undetermined."""
    p99 = (
        format_seconds(found.p99_s)
        if found.p99_s is not None
        else f"undetermined, {found.samples:,} samples (needs {P99_MIN_SAMPLES})"
    )
    return format_seconds(found.p50_s), format_seconds(found.p90_s), p99


def latency_cell(r: Result) -> str:
    """The batch-1 latency as "p50 / p90 / p99", or "—" where none was taken (training...)."""
    found = r.facts.latency
    return " / ".join(latency_percentiles(found)) if found else "—"


def caveat_lines(results: Sequence[Result], named: int = 5) -> list[str]:
    """Every measured result's caveats (analysis/trust), each once with the configurations it
    concerns ("all" when it concerns every one; the first `named` of them, then how many more:
    a report of 10,000 results stays readable)."""
    measured = [r for r in results if r.measurement is not None]
    found: dict[str, list[str]] = {}
    for r in measured:
        who = f"#{r.id} {r.spec.workload} on {r.spec.device} ({label(r.spec)})"
        for text in trust_of(r).texts:
            found.setdefault(text, []).append(who)
    lines = []
    for text, whos in found.items():
        more = f" and {len(whos) - named:,} more" if len(whos) > named else ""
        listed = "; ".join(whos[:named]) + more
        lines.append(f"{'all' if len(whos) == len(measured) > 1 else listed}: {text}")
    return lines


@dataclass(frozen=True)
class Best:
    """A workload on a device: its fastest result, and how far apart all of its results lie."""

    workload: str
    device: str
    best: Result
    count: int
    slowest: float  # samples/s
    fastest: float


def best_of(results: Sequence[Result]) -> list[Best]:
    """Per workload and device (machine/device where several machines), the fastest result
    and the range of all: what a reader wants first, and bounded whatever the results."""
    groups: dict[tuple[str, str], list[Result]] = {}
    several = len({machine_of(r.environment) for r in results}) > 1
    for r in results:
        if r.measurement is None:
            continue
        device = f"{machine_of(r.environment)}/{r.spec.device}" if several else r.spec.device
        groups.setdefault((r.spec.workload, device), []).append(r)
    out = []
    for (workload, device), members in sorted(groups.items()):
        rates = [r.samples_per_second or 0.0 for r in members]
        best = max(members, key=lambda r: r.samples_per_second or 0.0)
        out.append(Best(workload, device, best, len(members), min(rates), max(rates)))
    return out


def failures(results: Sequence[Result]) -> list[Result]:
    """Results that failed or were unsupported. Verify results carry no measurement either,
    but they are not failures of a benchmark."""
    return [r for r in results if r.measurement is None and r.facts.verification is None]
