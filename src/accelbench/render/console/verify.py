"""`accelbench verify`'s table: each run against the CPU fp32 baseline, and why not ok."""

from __future__ import annotations

from collections.abc import Sequence

from ...analysis.facts import LEFT_RUNNING, UNCHECKED, Verification
from ...core.result import Result
from .table import new_table, render_table

__all__ = ["VERIFY_HEADERS", "verify_cells", "verify_table"]

VERIFY_HEADERS = _VERIFY_HEADERS = (
    "device",
    "precision",
    "final loss",
    "held-out accuracy",
    "vs CPU fp32",
    "max loss deviation",
    "verdict",
)


def verify_table(results: Sequence[Result], notes: Sequence[str] = (), width: int = 120) -> str:
    """`accelbench verify`'s results: each run against the CPU fp32 baseline, and why not ok."""
    workload = results[0].spec.workload if results else ""
    table = new_table(f"accelbench verify: {workload}", _VERIFY_HEADERS, left_columns=2)
    table.columns[-1].justify = "left"  # the verdict is words
    curves, said = [], list(notes)
    for r in results:
        facts = r.facts.get(Verification) or Verification()
        table.add_row(r.spec.device, r.spec.precision, *_verify_cells(r, facts))
        if r.status == "ok" and facts.loss_curve is not None:
            curve = " ".join(map(_loss, facts.loss_curve))
            curves.append(f"  {r.spec.device} {r.spec.precision}: {curve}")
        said += _left_running(r)
        because = facts.inconclusive_because
        if because and f"INCONCLUSIVE: {because}" not in said:  # the same for every run
            said.append(f"INCONCLUSIVE: {because}")
    if results:
        said.append(_verify_legend(results[0]))
    if curves:
        said += ["loss per epoch:", *curves]
    return render_table(table, said, width)


def verify_cells(r: Result) -> list[str]:
    """A verify result's row, as its table shows it (VERIFY_HEADERS)."""
    facts = r.facts.get(Verification) or Verification()
    return [r.spec.device, r.spec.precision, *_verify_cells(r, facts)]


def _verify_cells(r: Result, facts: Verification) -> list[str]:
    """final loss, accuracy, its difference, the largest loss deviation, the verdict"""
    if r.status != "ok" or not facts.loss_curve:
        return ["—"] * 4 + [_verdict(r, facts)]
    gap = facts.max_loss_deviation
    return [
        _loss(facts.loss_curve[-1]),
        "—" if facts.accuracy is None else f"{facts.accuracy:.1%}",
        "baseline" if facts.is_baseline else _versus(facts),
        "—" if gap is None else f"{gap:.1%}",
        _verdict(r, facts),
    ]


def _left_running(r: Result) -> list[str]:
    """What the run's worker left running (engine/reaper stopped it), said beside the table."""
    entries = [str(x) for x in r.metrics.get(LEFT_RUNNING) or ()]
    left = [entry for entry in entries if not entry.startswith(UNCHECKED)]
    unchecked = [entry.removeprefix(UNCHECKED) for entry in entries if entry not in left]
    who, said = f"{r.spec.device} {r.spec.precision}", []
    if unchecked:  # the look for them failed (engine/reaper): the run stands
        said.append(f"{who}: whether its worker left processes running is unknown ({unchecked[0]})")
    if left:
        said.append(
            f"{who}: {len(left)} process(es) started in its worker outlived it "
            f"({', '.join(left[:3])}); they were stopped"
        )
    return said


def _verify_legend(first: Result) -> str:
    facts = first.facts.get(Verification) or Verification()
    optimizer = f" with {facts.optimizer}" if facts.optimizer else ""
    epochs = "?" if facts.epochs is None else facts.epochs
    return (
        f"{facts.data or 'digits'}; {epochs} epochs at batch "
        f"{first.spec.batch_size}{optimizer}, the same initial weights and batch order on every "
        "run; loss = mean training loss of the epoch; loss deviation = difference from CPU "
        "fp32's loss at the same epoch, as a fraction of CPU fp32's first-epoch loss; "
        "vs CPU fp32 = held-out accuracy difference in points, then its paired 95% interval "
        "over the same images; a run diverges only when significantly less accurate by more "
        "than the "
        f"tolerance; tolerances: {facts.tolerance_points:g} accuracy points, final loss "
        f"{facts.loss_tolerance:.0%}"
    )


def _loss(x: float | None) -> str:
    return "not finite" if x is None else f"{x:.4g}"


def _versus(facts: Verification) -> str:
    """The accuracy difference in points, with its paired 95% interval where recorded."""
    if facts.accuracy_diff_points is None:
        return "—"
    points = f"{facts.accuracy_diff_points:+.1f} points"
    if facts.accuracy_ci_points is None:  # recorded before verify kept per-image results
        return points
    low, high = facts.accuracy_ci_points
    return f"{points} [{low:+.1f} to {high:+.1f}]"


def _verdict(r: Result, facts: Verification) -> str:
    if r.status != "ok":
        return f"{r.status.upper()}: {r.error}"
    reasons = "; ".join(facts.reasons)
    if facts.verdict == "diverges":
        return f"DIVERGES: {reasons}"
    if facts.verdict == "undetermined":
        return f"UNDETERMINED: {facts.accuracy_note.removeprefix('undetermined: ')}"
    if facts.verdict == "inconclusive":  # why is said once, below the table
        return f"INCONCLUSIVE (differs anyway: {reasons})" if reasons else "INCONCLUSIVE"
    return facts.verdict or "?"
