"""The history gate's table (`compare --candidate RUN`): each configuration of a run against
the prediction interval of its earlier runs on the same machine.

Nothing here imports torch.
"""

from __future__ import annotations

from collections.abc import Sequence

from ...analysis.history import MIN_HISTORY, Judgement, Run
from ...levers import label
from ..text import number, short_names
from .table import new_table, render_table

__all__ = ["history_table"]

_HEADERS = (
    "workload",
    "device",
    "configuration",
    "earlier runs",
    "history samples/s [95% next run]",
    "spread",
    "candidate samples/s",
    "change",
    "verdict",
)


def history_table(judged: Sequence[Judgement], threshold: float, width: int = 120) -> str:
    """Candidate against history, configuration by configuration, with why for each verdict
    that is not plain (undetermined, regression) below."""
    machines = sorted({j.history.machine for j in judged})
    title = f"regression check against history on {', '.join(machines)} (threshold {threshold:.0%})"
    table = new_table(title, _HEADERS, left_columns=3)
    names = short_names(j.candidate.spec.workload for j in judged)
    notes = []
    for i, j in enumerate(judged, 1):
        found = j.history.prediction
        band = "—" if found is None else (
            f"{number(found.center)} [{number(found.low)}–{number(found.high)}]"
        )  # fmt: skip
        rate = Run.of(j.candidate).rate if j.candidate.measurement else None
        table.add_row(
            names[j.candidate.spec.workload],
            j.candidate.spec.device,
            label(j.candidate.spec),
            str(len(j.history.runs)),
            band,
            "—" if found is None else f"{found.spread:.1%}",
            j.candidate.status.upper() if rate is None else number(rate),
            "—" if j.change is None else f"{j.change:+.1%}",
            j.verdict + (f" ({i})" if j.verdict in ("undetermined", "REGRESSION") else ""),
        )
        if j.verdict in ("undetermined", "REGRESSION"):
            notes.append(f"({i}) {j.why}")
    notes.append(
        "each run's rate is the geometric mean of its processes' medians; the interval is "
        "where the next run should land (95%, Student's t over the earlier runs' log rates, "
        f"the last of them up to --window, at least {MIN_HISTORY}); REGRESSION: below it and "
        "slower than the threshold; ok: inside it, and it detects a slowdown of the threshold"
    )
    notes.extend(f"{short} is {whole}" for whole, short in sorted(names.items()) if short != whole)
    return render_table(table, notes, width)
