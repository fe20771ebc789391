"""Judging the optimization search's variants: each against fp32 eager, its drift against the
tolerance, a note where it did not pay, and the fastest variant within tolerance as the
recommendation. The search itself (what is measured, in which order) is `search`.

Each variant is an ordinary configuration (a RunSpec) run in its own worker, so a variant that
crashes, runs out of memory or cannot apply ends as that row's status and the search goes on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..analysis.compare import Speedup, speedup
from ..backends import code
from ..core.metrics import DRIFT, Drift
from ..core.result import Result, RunSpec
from ..core.vocab import GENERATE
from ..devices import Device
from ..levers import active_levers, all_levers, label
from ..workloads import Workload

__all__ = [
    "Rung",
    "Tolerance",
    "Assessment",
    "assess",
    "levers_not_tried",
    "is_launch_bound",
    "no_gain_reason",
    "recommend",
    "settings_code",
]

BASELINE = "fp32 eager"


@dataclass(frozen=True)
class Tolerance:
    """How far a variant's outputs may stray from the fp32 model's."""

    max_rel_error: float = 0.05
    min_top1: float = 0.95  # share of samples whose top-1 class must agree (classifiers)

    def breach(self, drift: Drift | None) -> str | None:
        """Why this drift is out of bounds, or None when it is within them."""
        if drift is None or drift.error:
            return f"its drift could not be measured ({drift.error if drift else 'no figure'})"
        if drift.not_finite:
            return "its outputs hold NaN or infinity"
        if drift.max_rel_error is None:
            return "its drift could not be measured (no figure)"
        if drift.max_rel_error > self.max_rel_error:
            return (
                f"max relative error {drift.max_rel_error:.2g} exceeds the tolerance "
                f"{self.max_rel_error:g}"
            )
        top1 = drift.top1_agreement
        if top1 is not None and top1 < self.min_top1:
            what = "generated-token agreement" if drift.token_ids else "top-1 agreement"
            return f"{what} {top1:.1%} is below {self.min_top1:.0%}"
        return None


@dataclass(frozen=True)
class Rung:
    """One variant of the ladder: a name a person reads and the configuration it runs."""

    name: str
    spec: RunSpec
    group: str = ""  # the lever group it belongs to (`optimize --levers`)
    late: bool = False  # measured alone only
    offered: bool = False  # shown beside the recommendation, never taken as it


def levers_not_tried(
    base: RunSpec, device: Device, workload: Workload, groups: Sequence[str]
) -> dict[str, str]:
    """Each group asked for that the ladder leaves out here, with the reason."""
    reasons = {}
    for lever in all_levers():
        for group in lever.ladder_groups:
            reasons[group] = lever.not_tried(group, base, device, workload)
            if base.mode == GENERATE and not lever.generates:
                reasons[group] = reasons[group] or "not measured with mode generate yet"
    return {group: why for group in groups if (why := reasons.get(group))}


@dataclass(frozen=True)
class Assessment:
    """One rung measured: its speedup over fp32 eager, whether its drift is allowed, and what a
    person should know about it."""

    rung: Rung
    result: Result
    speedup: Speedup | None
    refused: str | None  # why the recommendation may not take it
    note: str
    baseline: bool = False  # fp32 eager itself, which every speedup is against

    def to_dict(self) -> dict[str, Any]:
        return {
            "variant": self.rung.name,
            "spec": label(self.result.spec),
            "status": self.result.status,
            "error": self.result.error,
            "samples_per_s": self.result.samples_per_second,
            "speedup": self.speedup.to_dict() if self.speedup else None,
            "peak_memory": self.result.peak_memory,
            "drift": self.result.metrics.get(DRIFT),  # the stored record as it is
            "refused": self.refused,
            "note": self.note,
        }


def assess(
    rungs: Sequence[Rung], results: Sequence[Result], tolerance: Tolerance
) -> list[Assessment]:
    """Each rung against the first (fp32 eager)."""
    base = results[0]
    launch_bound = is_launch_bound(base)
    out = []
    for rung, result in zip(rungs, results, strict=True):
        if result.measurement is None:
            out.append(Assessment(rung, result, None, result.error or result.status, ""))
        elif result is base:
            out.append(Assessment(rung, result, None, None, "", baseline=True))
        else:
            ratio = speedup(result, base, spread_from=base) if base.measurement else None
            refused = tolerance.breach(result.facts.drift)
            out.append(Assessment(rung, result, ratio, refused, _note(rung, ratio, launch_bound)))
    return out


def recommend(verdicts: Sequence[Assessment]) -> Assessment:
    """The fastest variant within tolerance whose gain is real (its interval clears 1), offered
    ones (a larger batch) aside; fp32 eager when none is."""
    paying = [
        v
        for v in verdicts[1:]
        if v.speedup and v.refused is None and v.speedup.low > 1.0 and not v.rung.offered
    ]
    if not paying:
        return verdicts[0]
    return max(paying, key=lambda v: v.speedup.ratio if v.speedup else 0.0)


def is_launch_bound(base: Result) -> bool:
    """Whether fp32 eager's verdict says its step is launch-bound."""
    verdict = base.facts.bottleneck
    return verdict is not None and verdict.kind == "launch-bound"


def _paid(ratio: Speedup | None) -> bool:
    return ratio is not None and ratio.significant and ratio.low > 1.0


def _note(rung: Rung, ratio: Speedup | None, launch_bound: bool) -> str:
    """Say plainly when a lever does not pay, and why when the reason is known."""
    if ratio is None or _paid(ratio):
        return ""
    text = (
        f"does not pay here ({ratio.text()})"
        if not ratio.significant
        else f"slower ({ratio.text()})"
    )
    reason = no_gain_reason(rung, ratio, launch_bound)
    return f"{text}: {reason}" if reason else text


def no_gain_reason(rung: Rung, ratio: Speedup | None, launch_bound: bool) -> str:
    """Why a variant that did not pay is known not to, or "" (also when it paid)."""
    if ratio is None or _paid(ratio):
        return ""
    reasons = (lever.no_gain_reason(rung.spec, launch_bound) for lever in active_levers(rung.spec))
    return next((r for r in reasons if r), "")


def settings_code(spec: RunSpec, device: Device) -> list[str]:
    """The lines that apply this variant's settings in one's own code."""
    return code(spec, device) or ["# nothing to change: fp32 eager is the fastest within tolerance"]
