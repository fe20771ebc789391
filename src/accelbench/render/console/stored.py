"""Tables of stored results: `accelbench results`, `compare --by` and `compare --baseline`.

Nothing here imports torch, so that commands that only read the store need not pay for it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ...analysis.compare import DEVICE, FASTEST, MIN_SAMPLES, Change, Comparison
from ...analysis.facts import Verification, partial_mark
from ...analysis.history import DEFAULT_WINDOW, MIN_HISTORY, Placement
from ...core.levels import MIN_PROCESSES
from ...core.result import Result
from ...levers import CONFIGURATION, label
from ..rows import RESULT_COLUMNS, samples_unit
from ..text import interval, number, short_names
from .table import new_table, render_table

__all__ = ["changes_table", "compare_table", "results_table"]

_HISTORY_HEADER = "vs earlier runs [next run's 95%]"


def results_table(
    results: Sequence[Result],
    width: int = 120,
    history: Mapping[str, Placement] | None = None,
    read_from: str = "",
) -> str:
    """Stored results, newest first; `history` (by uid) says where each run landed against
    the earlier runs of its configuration on its machine; `read_from`, where they were read
    from only part of the store, which part."""
    placed = history or {}
    # the history column only where some listed run has earlier runs: it costs a narrow
    # terminal its other columns' width
    shown = any(r.uid in placed for r in results)
    headers = ("id", "when (UTC)", *RESULT_COLUMNS, *[_HISTORY_HEADER][:shown], "status", "host")
    table = new_table(f"{len(results)} stored result(s), newest first", headers)
    for r in results:
        m = r.measurement
        table.add_row(
            str(r.id),
            r.created_at.replace("T", " ").removesuffix("+00:00"),
            r.spec.workload,
            r.spec.device,
            r.environment.get("device_model", ""),
            label(r.spec),
            _samples(r) if m else "—",
            interval(m.rate, r.samples_per_block) if m else "—",
            number(m.rate.median) if m else "—",
            *[_placement(placed.get(r.uid))][:shown],
            _status(r),
            r.environment.get("host", ""),
        )
    notes = []
    if shown:
        notes.append(
            "vs earlier runs: inside or OUTSIDE the 95% prediction interval (samples/s) of "
            "the earlier runs of its configuration on its machine (the last "
            f"{DEFAULT_WINDOW}; at least {MIN_HISTORY}); `compare --candidate RUN` gates on it"
        )
    if read_from:
        notes.append(
            f"earlier runs were read from {read_from}; — where those held fewer than "
            f"{DEFAULT_WINDOW} of a run's (`compare --candidate RUN` reads every one)"
        )
    return render_table(table, notes, width=width)


def _placement(placed: Placement | None) -> str:
    if placed is None:
        return "—"
    found = placed.prediction
    if found is None:
        return f"{placed.earlier} earlier, needs {MIN_HISTORY}"
    where = "inside" if placed.inside else "OUTSIDE"
    return f"{where} [{number(found.low)}–{number(found.high)}]"


def _status(r: Result) -> str:
    """A stored result's status; a verify result's verdict and accuracy with it."""
    status = r.status if r.status == "ok" else f"{r.status}: {r.error}"
    facts = r.facts.get(Verification)
    if facts is None:
        return status
    if r.status != "ok":
        return f"verify {status}"
    return f"verify {facts.verdict or '?'}: {facts.accuracy or 0:.1%} held-out"


def compare_table(comparison: Comparison, width: int = 120, why: str = "") -> str:
    """Each result beside its group's baseline; `why` says, in the title, why this comparison
    (compare's default on a machine with one device)."""
    by = comparison.by
    device = () if by == DEVICE.name else ("device",)  # else the compared column names it
    config = () if by == CONFIGURATION.name else ("configuration",)  # the same, likewise
    fastest = comparison.baseline_value == FASTEST
    headers = (
        "workload",
        *device,
        *config,
        by,
        "samples/s",
        "95% CI",
        "it/s",
        f"vs {comparison.baseline_value or 'baseline'} [95% CI]",
    )
    title = f"compared by {by}" + (f": {why}" if why else "")
    table = new_table(title, headers, left_columns=2 + len(device) + len(config))
    names = short_names(row.result.spec.workload for row in comparison.rows)
    for row in comparison.rows:
        r, m = row.result, row.result.measurement
        assert m is not None  # a comparison holds measured results only
        itself = "fastest" if fastest else "baseline"
        versus = row.speedup.text() if row.speedup else (itself if row.baseline is r else "—")
        table.add_row(
            names[r.spec.workload],
            *((r.spec.device,) if device else ()),
            *((label(r.spec),) if config else ()),
            row.value,
            _samples(r),
            interval(m.rate, r.samples_per_block),
            number(m.rate.median),
            versus,
        )
    notes = [
        "speedup = ratio of samples/s (each the geometric mean of its processes' medians); its "
        "95% CI is Student's t over processes, paired pass by pass where both ran in one "
        "sweep; (n.s.) marks a difference the interval cannot tell from none; with fewer than "
        f"{MIN_PROCESSES} processes or {MIN_SAMPLES} timed samples on a side there is no "
        "interval, and no difference is called",
        *_whole_names(names),
    ]
    if not comparison.rows:
        notes = ["no results match: nothing to compare (check the filters)"]
    elif not any(row.speedup for row in comparison.rows):
        notes.append(f"each {by} stands alone here: nothing to compare it with")
    return render_table(table, notes, width)


def _whole_names(names: dict[str, str]) -> list[str]:
    """A note per shortened name, with the whole of it."""
    return [f"{short} is {whole}" for whole, short in sorted(names.items()) if short != whole]


_CHANGES_HEADERS = (
    "workload",
    "device",
    "configuration",
    "baseline it/s",
    "candidate it/s",
    "candidate / baseline [95% CI]",
    "verdict",
)


def changes_table(changes: Sequence[Change], threshold: float, width: int = 120) -> str:
    """Candidate against baseline, configuration by configuration, regressions marked."""
    title = f"regression check (threshold {threshold:.0%})"
    table = new_table(title, _CHANGES_HEADERS, left_columns=3)
    names = short_names(c.spec.workload for c in changes)
    for i, c in enumerate(changes, 1):
        base, cand = c.baseline.measurement, c.candidate.measurement
        assert base is not None  # only measured baselines are matched
        table.add_row(
            names[c.spec.workload],
            c.spec.device,
            label(c.spec),
            number(base.rate.median) + partial_mark(c.baseline),
            number(cand.rate.median) + partial_mark(c.candidate)
            if cand
            else c.candidate.status.upper(),
            c.speedup.text() if c.speedup else f"failed: {c.candidate.error}",
            c.verdict + (f" ({i})" if c.why else ""),
        )
    notes = [
        "candidate / baseline = ratio of samples/s; its 95% CI is taken over processes "
        "(Student's t, paired pass by pass where both ran in one sweep); ok: the CI rules out "
        f"a slowdown past {threshold:.0%}; undetermined: it cannot (too few processes or "
        "samples, or too wide), so it is neither ok nor a regression",
        *(f"({i}) {c.why}" for i, c in enumerate(changes, 1) if c.why),
        *_whole_names(names),
    ]
    return render_table(table, notes, width)  # compare refuses runs with nothing in common


def _samples(r: Result) -> str:
    assert r.measurement is not None
    rate = number(r.measurement.rate.median * r.samples_per_block)
    return rate + samples_unit(r) + partial_mark(r)
