"""`accelbench optimize`'s table: the search's variants, the path it took, what did not pay and
why, what was offered, and the recommendation with the code that applies it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ...analysis.facts import DECISIVE_MARGIN, Drift, OnnxRuntimeFacts
from ...analysis.trust import trust_of
from ...core.modes import mode_of
from ...levers import label
from ..text import format_bytes, number
from .run_notes import onnxruntime_note
from .table import new_table, render_table

if TYPE_CHECKING:  # the types only: the optimize workflow imports torch
    from ...workflows.optimize import Assessment, Tolerance
    from ...workflows.optimize_plan import Ladder, Searched
    from ...workflows.search import Trial

__all__ = ["optimize_table"]

_OPTIMIZE_HEADERS = (
    "variant",
    "samples/s",
    "vs fp32 eager (95% CI)",
    "peak memory",
    "max rel. error",
    "top-1 agree",
    "within tolerance",
)
# A generation's samples are its tokens; its error is its logits' as a share of their spread,
# and its tokens are compared at the decisive positions (analysis/drift.logit_drift). A
# record from before issue 27 shows the first token's logits' error and all its tokens.
_GENERATE_HEADERS = (
    "variant",
    "tokens/s",
    "vs fp32 eager (95% CI)",
    "peak memory",
    "logit error / spread",
    "decisive tokens agree",
    "within tolerance",
)


def optimize_table(searched: Searched, chosen: Assessment, ladder: Ladder, width: int = 120) -> str:
    """The search as a table, its path, what did not pay and why, the offers, and the
    recommendation with its code."""
    from ...workflows.optimize import settings_code

    verdicts, outcome = searched.verdicts, searched.outcome
    base = ladder.base
    generates = mode_of(base).decodes
    shape = "".join(f" {part}" for part in mode_of(base).label_parts(base))
    batch = f" b{base.batch_size}" if mode_of(base).fixed_batch else ""
    title = (
        f"accelbench optimize: {base.workload} {base.mode}{batch}{shape} on {ladder.device.name}"
    )
    headers = _GENERATE_HEADERS if generates else _OPTIMIZE_HEADERS
    table = new_table(title, headers, left_columns=1)
    notes: list[str] = []
    for v, trial in zip(verdicts, outcome.trials, strict=True):
        table.add_row(v.rung.name, *_optimize_cells(v, trial, ladder.tolerance))
    notes.append(f"the search's path ({outcome.wall_s:.0f} s of a {ladder.budget:.0f} s budget):")
    notes += searched.path()
    if searched.time is not None:
        notes.append(f"time: {searched.time.text()}")
    not_tried = {**ladder.not_tried, **dict(outcome.not_tried)}
    notes += [f"not tried: {name}: {why}" for name, why in not_tried.items()]
    notes += _backend_notes(verdicts)
    notes += _state_notes(verdicts)
    notes.append(_drift_words(ladder.tolerance, generates))
    notes += _undetermined_notes(verdicts, ladder.tolerance)
    if ladder.device.caveat:
        notes.append(ladder.device.caveat)
    notes += _recommendation(chosen, verdicts, settings_code(chosen.result.spec, ladder.device))
    notes += _offers(verdicts, chosen, ladder)
    return render_table(table, notes, width)


def _drift_words(tolerance: Tolerance, generates: bool) -> str:
    if generates:
        return (
            "drift: each variant's generation against fp32 eager's on the CPU (same weights "
            "and prompt), each step fed fp32's tokens so that one difference does not change "
            "the rest. Its logit error is the rms of its logits' errors over the vocabulary, "
            "as a share of the spread (standard deviation) of fp32's, at the worst position; "
            "its tokens count only at decisive positions, where fp32's top token leads the "
            f"second by more than {DECISIVE_MARGIN:g} times that error (rounding flips such a "
            "lead with a chance under 0.3%; random weights give near-uniform logits, where "
            f"most leads are near-ties). Tolerance: logit error {tolerance.max_spread_error:g}, "
            f"{tolerance.min_top1:.0%} of the decisive tokens agreeing; with fewer than "
            f"{tolerance.min_decisive} decisive positions the tokens are undetermined and the "
            "variant is judged on its logits alone, as outputs without classes are"
        )
    return (
        f"drift: outputs against the fp32 model's on the benchmark's batch (same weights); "
        f"tolerance: max relative error {tolerance.max_rel_error:g}, top-1 agreement "
        f"{tolerance.min_top1:.0%} or more (classifiers)"
    )


def _undetermined_notes(verdicts: Sequence[Assessment], tolerance: Tolerance) -> list[str]:
    """Each variant whose tokens could not be judged, and why."""
    notes = []
    for v in verdicts:
        drift = v.result.facts.get(Drift) if v.result.measurement is not None else None
        if not v.baseline and (why := tolerance.tokens_undetermined(drift)):
            notes.append(f"{v.rung.name}: {why}; judged on its logits alone")
    return notes


def _backend_notes(verdicts: Sequence[Assessment]) -> list[str]:
    """How ONNX Runtime rows were timed and their memory read, which differs from PyTorch's."""
    notes = []
    for v in verdicts:
        r = v.result
        ort = r.facts.get(OnnxRuntimeFacts)
        if ort and r.measurement is not None:
            notes.append(f"{v.rung.name}: {onnxruntime_note(ort, r.peak_memory_meaning)}")
    return notes


def _state_notes(verdicts: Sequence[Assessment]) -> list[str]:
    """The caveats of the measured variants (analysis/trust), each once with the variants it
    concerns: a figure taken while something else used the machine is not to be trusted."""
    found: dict[str, list[str]] = {}
    for v in verdicts:
        if v.result.measurement is not None:
            for note in trust_of(v.result).texts:
                found.setdefault(note, []).append(v.rung.name)
    return [f"{'; '.join(names)}: {note}" for note, names in found.items()]


_FAILED = {"error": "does not apply", "oom": "OOM", "unsupported": "does not apply"}


def _optimize_cells(v: Assessment, trial: Trial, tolerance: Tolerance) -> list[str]:
    r = v.result
    if r.measurement is None:
        status = "not finished" if trial.budget_cut else _FAILED.get(r.status, r.status.upper())
        return [status, "", "", "", "", ""]
    drift = r.facts.get(Drift)
    error, agree = _drift_cells(drift)
    baseline = v.baseline
    return [
        number(r.samples_per_second or 0),
        "1.00x (baseline)" if baseline else (v.speedup.text() if v.speedup else "—"),
        format_bytes(r.peak_memory),
        "not finite" if drift and drift.not_finite else error,
        agree,
        "baseline" if baseline else _within(v, tolerance),
    ]


def _drift_cells(drift: Drift | None) -> tuple[str, str]:
    """The error and agreement columns: a generation's logits against their spread and its
    decisive tokens where it has them, else the largest relative error and top-1."""
    if drift is not None and drift.by_spread:
        if drift.spread_error is None:
            return "undetermined", "—"
        shown = drift.decisive_agreement
        agree = f"{shown:.1%} of {drift.decisive_positions}" if shown is not None else "none"
        return f"{drift.spread_error:.2g}", agree
    top1 = drift.top1_agreement if drift else None
    error = drift.max_rel_error if drift else None
    return (
        f"{error:.2g}" if error is not None else "—",
        f"{top1:.1%}" if top1 is not None else "—",
    )


def _within(v: Assessment, tolerance: Tolerance) -> str:
    if v.refused:
        return "no"
    return "yes (logits)" if tolerance.tokens_undetermined(v.result.facts.get(Drift)) else "yes"


def _recommendation(
    chosen: Assessment, verdicts: Sequence[Assessment], code: list[str]
) -> list[str]:
    from ...workflows.optimize import gain_path, gain_text

    if verdicts[0].result.measurement is None:
        return ["no recommendation: fp32 eager, the baseline, did not run"]
    if chosen is verdicts[0]:
        head = "recommendation: stay with fp32 eager: no variant within tolerance is faster " + (
            "with its 95% CI above 1"
        )
        return [head, *(f"    {line}" for line in code)]
    assert chosen.speedup is not None  # recommend() takes only variants with a speedup
    head = f"recommendation: {chosen.rung.name}, {chosen.speedup.text()} over fp32 eager"
    head += f" (accelbench configuration: {label(chosen.result.spec)})"
    factors = gain_path(verdicts, chosen)
    lines = [head]
    if len(factors) > 1:  # one factor is the line above
        lines.append(f"  where the gain comes from: {gain_text(factors, chosen.speedup)}")
    return [*lines, *(f"    {line}" for line in code)]


def _offers(verdicts: Sequence[Assessment], chosen: Assessment, ladder: Ladder) -> list[str]:
    """What a larger batch would give, beside (never instead of) the recommendation."""
    from ...levers.batch import LargerBatch

    offers = [v for v in verdicts if v.rung.offered and v.speedup and v.refused is None]
    best = max(offers, key=lambda v: v.speedup.ratio if v.speedup else 0.0, default=None)
    if best is None or best.speedup is None or best.speedup.low <= 1.0:
        return []
    r = best.result
    line = (
        f"offered, not recommended: {best.rung.name}, {best.speedup.text()} over fp32 eager, "
        f"{number(r.samples_per_second or 0)} samples/s at peak memory "
        f"{format_bytes(r.peak_memory)}; {LargerBatch.caveat(r.spec)}"
    )
    return [line]
