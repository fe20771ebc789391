"""What the reports share: a comparison row's cells, the columns worth showing, the fastest per
workload, the latency's text, which results failed."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..analysis.compare import Row, Speedup, speedup
from ..analysis.facts import Drift, Verification, partial_mark
from ..analysis.trust import trust_of
from ..core.modes import mode_of
from ..core.result import Result, machine_of
from ..engine.facts import P99_MIN_SAMPLES, Latency
from ..levers import label
from ..workflows.facts import OptimizeTag
from .text import format_seconds, interval, number

__all__ = [
    "EXPLAINED",
    "HEADERS",
    "TABLE_ROWS",
    "Best",
    "best_of",
    "caveat_lines",
    "device_namer",
    "informative",
    "refusal",
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
# The id leads, as each chart's bar is labelled "#24 ...", so a bar can be found in the table
HEADERS = ("id", *RESULT_COLUMNS, LATENCY_HEADER, "vs CPU [95% CI]")
# Cells that tell nothing: a column holding only these is left out of a report's table (on a
# machine with only a CPU, "vs CPU" is "baseline" on every row, the verdict "undetermined")
SAYS_NOTHING = frozenset({"", "—", "n/a", "baseline", "undetermined"})


def row_cells(row: Row) -> list[str]:
    """A comparison's row as text: the figures, and its speedup against the CPU baseline."""
    r, m = row.result, row.result.measurement
    assert m is not None
    versus = row.speedup.text() if row.speedup else ("baseline" if row.baseline is r else "—")
    return [
        f"#{r.id}" if r.id is not None else "—",
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


def informative(
    headers: Sequence[str], rows: Sequence[Sequence[str]]
) -> tuple[list[int], list[str]]:
    """Which columns to show: those with a cell that says something (not in SAYS_NOTHING);
    and, for each left out, what it held ("vs CPU [95% CI]: baseline, —"), for a note."""
    kept, dropped = [], []
    for i, header in enumerate(headers):
        cells = [row[i] for row in rows]
        if rows and all(cell in SAYS_NOTHING for cell in cells):
            held = ", ".join(f"'{c}'" if c else "empty" for c in dict.fromkeys(cells))
            dropped.append(f"{header} ({held})")
        else:
            kept.append(i)
    return kept, dropped


def samples_cell(r: Result) -> str:
    """The samples/s cell of a report's row, marked where the result is partial."""
    return f"{r.samples_per_second or 0:,.0f}{samples_unit(r)}{partial_mark(r)}"


def samples_unit(r: Result) -> str:
    """What a samples/s cell adds: a mode whose rate counts something else (a generation's
    tokens) says so."""
    unit = mode_of(r.spec).rate_unit
    return f" {unit}" if unit else ""


def shared_unit(results: Sequence[Result]) -> str:
    """The rate unit every result's mode shares where it is not samples/s, else ""."""
    units = {mode_of(r.spec).rate_unit for r in results}
    return units.pop() if len(units) == 1 else ""


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
    found = r.facts.get(Latency)
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
    """A workload in one mode: its fastest result, and how far ahead it is of the fastest and
    of the slowest other configuration (None where it is the only one)."""

    workload: str
    mode: str
    best: Result
    configurations: int  # distinct configurations measured (machine, device and spec)
    next: Result | None = None
    slowest: Result | None = None

    def over(self, other: Result | None) -> Speedup | None:
        """The fastest's speedup over `other`, with its interval over processes."""
        return None if other is None else speedup(self.best, other)


def best_of(results: Sequence[Result]) -> list[Best]:
    """Per workload and mode (samples/s of train and infer do not compare), the fastest result
    on any device, and the next fastest and the slowest other configuration: what a reader
    wants first, and bounded whatever the results."""
    groups: dict[tuple[str, str], list[Result]] = {}
    for r in results:
        if r.measurement is not None:
            groups.setdefault((r.spec.workload, r.spec.mode), []).append(r)
    out = []
    for (workload, mode), members in sorted(groups.items()):
        ranked = sorted(members, key=lambda r: -(r.samples_per_second or 0.0))
        best = ranked[0]
        others = [r for r in ranked if _configuration(r) != _configuration(best)]
        count = len({_configuration(r) for r in members})
        nxt, slowest = (others[0], others[-1]) if others else (None, None)
        out.append(Best(workload, mode, best, count, nxt, slowest))
    return out


def _configuration(r: Result) -> tuple[str, object]:
    return machine_of(r.environment), r.spec


def refusal(r: Result, results: Sequence[Result]) -> str:
    """Why `accelbench optimize` refused this variant (its outputs drift past the search's
    tolerance, stored with the search's fp32 eager), or "": the fastest of a workload may be
    one a search would not recommend, and a reader must know before taking it."""
    tag = r.facts.get(OptimizeTag)
    if tag is None:
        return ""
    from ..workflows.optimize import BASELINE, Tolerance  # here: the workflow imports torch

    tags = ((x, x.facts.get(OptimizeTag)) for x in results if x.sweep == r.sweep)
    stored = next((t.tolerance for x, t in tags if t and t.variant == BASELINE), None)
    if tag.variant == BASELINE or not stored:
        return ""

    tolerance = Tolerance.from_stored(stored)
    why = tolerance.breach(r.facts.get(Drift)) if tolerance else "its stored tolerance is damaged"
    return f"refused by its optimize search: {why}" if why else ""


def device_namer(results: Sequence[Result]) -> Callable[[Result], str]:
    """A result's device as a report names it: machine/device where the results span
    machines, as the results table does."""
    if len({machine_of(r.environment) for r in results}) > 1:
        return lambda r: f"{machine_of(r.environment)}/{r.spec.device}"
    return lambda r: r.spec.device


def failures(results: Sequence[Result]) -> list[Result]:
    """Results that failed or were unsupported. Verify results carry no measurement either,
    but they are not failures of a benchmark."""
    return [r for r in results if r.measurement is None and r.facts.get(Verification) is None]
