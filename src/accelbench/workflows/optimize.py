"""Judging the optimization search's variants: each against fp32 eager and against what it
was tried on (a stack, or a reference of its own: int8 against ONNX Runtime's fp32), its drift
against the tolerance, a note where it did not pay, the fastest variant within tolerance as the
recommendation, and the factors its gain is made of. The search itself (what is measured, in
which order) is `search`.

Each variant is an ordinary configuration (a RunSpec) run in its own worker, so a variant that
crashes, runs out of memory or cannot apply ends as that row's status and the search goes on.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any

from ..analysis.compare import Speedup, speedup
from ..analysis.facts import DRIFT, Drift
from ..analysis.verdict import Bottleneck
from ..backends import code
from ..core.limits import count_problem
from ..core.modes import mode_of
from ..core.result import Result, RunSpec, machine_of
from ..devices import Device
from ..errors import UsageError
from ..levers import active_levers, all_levers, find_lever, label
from ..workloads import Workload

__all__ = [
    "Rung",
    "Tolerance",
    "Assessment",
    "Factor",
    "assess",
    "beside_run",
    "gain_path",
    "gain_text",
    "levers_not_tried",
    "opt_in_not_asked",
    "is_launch_bound",
    "no_gain_reason",
    "recommend",
    "settings_code",
    "stack_name",
]

BASELINE = "fp32 eager"


def beside_run(baseline: Result, stored: Sequence[Result], run_steps: int) -> str:
    """fp32 eager against `run`'s newest result of the same configuration on the same machine
    (its workload's `run_steps` steps an it), and why the two may differ (issue 37: 4,889
    samples/s in `run`, 8,314 here, on a busy 2-core VM); "" where there is none."""
    m = baseline.measurement
    if m is None or baseline.samples_per_second is None:
        return ""
    target = replace(baseline.spec, steps_per_block=run_steps)
    machine = machine_of(baseline.environment)
    found = next(
        (
            r
            for r in stored  # newest first
            if r.spec == target
            and r.sweep != baseline.sweep
            and r.samples_per_second is not None
            and r.measurement is not None
            and machine_of(r.environment) == machine
        ),
        None,
    )
    if found is None or found.measurement is None or found.samples_per_second is None:
        return ""
    return (
        f"{BASELINE} here, {baseline.samples_per_second:,.0f} samples/s, is "
        f"{speedup(baseline, found).text()} of `run`'s result #{found.id} of this configuration "
        f"on this machine ({found.samples_per_second:,.0f}, {found.created_at[:16]}): timed "
        f"here {baseline.spec.steps_per_block} step(s) an it, {len(m.samples)} samples over "
        f"{m.processes} process(es), now; there {run_steps} steps an it, "
        f"{len(found.measurement.samples)} samples over {found.measurement.processes} "
        "process(es), then. On a busy host the moment moves a figure more than the way it is "
        "timed (each result's caveats say how busy); compare configurations measured in one "
        "command"
    )


def _finite(value: object) -> bool:
    """Whether `value` is a finite number (a bool is not one)."""
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    return number and math.isfinite(value)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Tolerance:
    """How far a variant's outputs may stray from the fp32 model's.

    A generation's drift (since issue 27, `Drift.by_spread`) is held to `max_spread_error`,
    its logits' error as a share of their spread, and `min_top1` of its tokens at the
    decisive positions. Where fewer than `min_decisive` positions are decisive, the tokens
    are undetermined and the variant is judged on its logits alone, as the outputs of a
    model without classes are; where no logits could be compared, its drift is undetermined
    and it is refused, as a drift that could not be measured is."""

    max_rel_error: float = 0.05
    min_top1: float = 0.95  # share of samples whose top-1 class must agree (classifiers)
    # Generation: bf16's rounding left llama-1b's random-weight logits off by 0.29 of their
    # spread at the worst of 128 positions (fp16 0.018; gpt2's 0.013 in bf16); logits of
    # another computation (another context, a broken kernel) are off by about their spread.
    max_spread_error: float = 0.5
    # Fewer decisive positions than this and one disagreement decides: too few to judge.
    min_decisive: int = 10

    def __post_init__(self) -> None:
        # a NaN bound would pass every variant: each comparison with it is false
        for name in ("max_rel_error", "max_spread_error"):
            value = getattr(self, name)
            if not (_finite(value) and value > 0):
                raise UsageError(f"{name} must be a finite number above 0, not {value!r}")
        if not (_finite(self.min_top1) and 0 <= self.min_top1 <= 1):
            raise UsageError(f"min_top1 must be a share from 0 to 1, not {self.min_top1!r}")
        problem = count_problem(self.min_decisive, 1)
        if problem:
            raise UsageError(f"min_decisive {problem}, not {self.min_decisive!r}")

    @classmethod
    def from_stored(cls, stored: Mapping[str, Any]) -> Tolerance | None:
        """The tolerance a search stored with its results (its tag's numbers, which JSON and
        the facts' codec hand back as floats); only the fields this accelbench knows, since an
        imported file may carry others; None where they do not make a valid tolerance."""
        known: dict[str, Any] = {f.name: stored[f.name] for f in fields(cls) if f.name in stored}
        count = known.get("min_decisive")
        if isinstance(count, float) and count.is_integer():
            known["min_decisive"] = int(count)
        try:
            return cls(**known)
        except (UsageError, TypeError):
            return None

    def breach(self, drift: Drift | None) -> str | None:
        """Why this drift is out of bounds, or None when it is within them."""
        if drift is None or drift.error:
            return f"its drift could not be measured ({drift.error if drift else 'no figure'})"
        if drift.not_finite:
            return "its outputs hold NaN or infinity"
        if drift.by_spread:
            return self._generation_breach(drift)
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

    def tokens_undetermined(self, drift: Drift | None) -> str:
        """Why a generation's tokens could not be judged ("" where they were): too few
        positions where fp32's top token leads by more than the variant's error can flip."""
        if drift is None or drift.spread_error is None or drift.decisive_positions is None:
            return ""
        if drift.decisive_positions >= self.min_decisive:
            return ""
        return (
            f"tokens undetermined: {drift.decisive_positions} of {drift.positions} positions "
            f"decisive, {self.min_decisive} needed"
        )

    def _generation_breach(self, drift: Drift) -> str | None:
        if drift.spread_error is None:
            return f"its drift is undetermined ({drift.undetermined or 'no logits compared'})"
        if drift.spread_error > self.max_spread_error:
            return (
                f"its logits are off by {drift.spread_error:.2g} of their spread, over the "
                f"tolerance {self.max_spread_error:g}"
            )
        agreement = drift.decisive_agreement
        if self.tokens_undetermined(drift) or agreement is None:
            return None  # judged on the logits alone
        if agreement < self.min_top1:
            return (
                f"tokens agree at {agreement:.1%} of {drift.decisive_positions} decisive "
                f"positions, below {self.min_top1:.0%}"
            )
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
            if mode_of(base).decodes and not lever.generates:
                reasons[group] = reasons[group] or f"not measured with mode {base.mode} yet"
    return {group: why for group in groups if (why := reasons.get(group))}


def opt_in_not_asked(groups: Sequence[str]) -> dict[str, str]:
    """Each opt-in group (max-autotune's minutes, a larger batch) that `groups` leaves out."""
    return {
        group: "opt-in: tried only when --levers names it"
        for lever in all_levers()
        for group in lever.opt_in
        if group not in groups
    }


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
    # What it was tried on where that is not fp32 eager (a stack; int8's ONNX Runtime fp32):
    # its index among the assessments, and its gain over that one, which must be real too.
    reference: int | None = None
    step: Speedup | None = None

    def to_dict(self, names: Sequence[str] = ()) -> dict[str, Any]:
        """As --json shows it; `names`: every assessment's variant, to name its reference."""
        over = names[self.reference] if self.reference is not None and names else None
        return {
            "variant": self.rung.name,
            "spec": label(self.result.spec),
            "status": self.result.status,
            "error": self.result.error,
            "samples_per_s": self.result.samples_per_second,
            "speedup": self.speedup.to_dict() if self.speedup else None,
            "over": over or (None if self.baseline else BASELINE),
            "speedup_over": self.step.to_dict() if self.step else None,
            "peak_memory": self.result.peak_memory,
            "drift": self.result.metrics.get(DRIFT),  # the stored record as it is
            "refused": self.refused,
            "note": self.note,
        }


def assess(
    rungs: Sequence[Rung],
    results: Sequence[Result],
    tolerance: Tolerance,
    references: Sequence[int | None] = (),
) -> list[Assessment]:
    """Each rung against the first (fp32 eager), and against its reference where it has one
    (`references[i]`, an index into `rungs`; None or 0: fp32 eager)."""
    base = results[0]
    launch_bound = is_launch_bound(base)
    out = []
    for i, (rung, result) in enumerate(zip(rungs, results, strict=True)):
        if result.measurement is None:
            out.append(Assessment(rung, result, None, result.error or result.status, ""))
        elif result is base:
            out.append(Assessment(rung, result, None, None, "", baseline=True))
        else:
            ratio = speedup(result, base, spread_from=base) if base.measurement else None
            refused = tolerance.breach(result.facts.get(Drift))
            ref = references[i] if i < len(references) else None
            step = _step(result, results[ref], base) if ref else None
            note = _note(rung, step or ratio, launch_bound, rungs[ref].name if step and ref else "")
            out.append(Assessment(rung, result, ratio, refused, note, False, ref or None, step))
    return out


def _step(result: Result, reference: Result, base: Result) -> Speedup | None:
    if reference.measurement is None or base.measurement is None:
        return None
    return speedup(result, reference, spread_from=base)


def recommend(verdicts: Sequence[Assessment], threshold: float = 0.0) -> Assessment:
    """The fastest variant within tolerance whose gain is real (its interval clears 1), over
    fp32 eager and over what it was tried on (int8 must beat ONNX Runtime's fp32, a lever the
    stack it joined), by more than `threshold` (the keep threshold: 0.02 asks the interval to
    clear 1.02) over what it was tried on; offered ones (a larger batch) aside; fp32 eager when
    none is."""
    least = 1.0 + threshold
    paying = [
        v
        for v in verdicts[1:]
        if v.speedup
        and v.refused is None
        and v.speedup.low > 1.0
        and (v.step.low if v.step is not None else v.speedup.low) > least
        and not v.rung.offered
    ]
    if not paying:
        return verdicts[0]
    return max(paying, key=lambda v: v.speedup.ratio if v.speedup else 0.0)


@dataclass(frozen=True)
class Factor:
    """One factor of a variant's gain: what a step added, over what, and by how much."""

    adds: str  # "onnxruntime-cpu fp32", then "int8"
    over: str  # the variant it was measured against
    speedup: Speedup

    def to_dict(self) -> dict[str, Any]:
        return {"adds": self.adds, "over": self.over, "speedup": self.speedup.to_dict()}


def gain_path(verdicts: Sequence[Assessment], chosen: Assessment) -> list[Factor]:
    """Where `chosen`'s gain over fp32 eager comes from, first step first: each variant on the
    way and its own gain over the one before ("onnxruntime-cpu fp32 6.70x, then int8 1.53x").
    The factors multiply to its speedup: each is a ratio of the same per-process rates."""
    factors: list[Factor] = []
    v: Assessment | None = chosen
    while v is not None and not v.baseline:
        ref = verdicts[v.reference] if v.reference is not None else None
        if ref is None or ref.baseline or v.step is None:
            if v.speedup is not None:
                factors.append(Factor(v.rung.name, BASELINE, v.speedup))
            break
        adds = stack_name(v.result.spec, ref.result.spec)
        factors.append(Factor(adds if adds != BASELINE else v.rung.name, ref.rung.name, v.step))
        v = ref
    return factors[::-1]


def gain_text(factors: Sequence[Factor], total: Speedup | None) -> str:
    """The factors in words: "onnxruntime-cpu fp32 6.70x, then int8 1.53x = 10.23x over fp32
    eager"; one factor alone is just itself."""
    if not factors:
        return ""
    steps = ", then ".join(f"{f.adds} {f.speedup.ratio:.2f}x" for f in factors)
    product = total.ratio if total is not None else 0.0
    return f"{steps} = {product:.2f}x over {BASELINE}" if len(factors) > 1 else steps


def is_launch_bound(base: Result) -> bool:
    """Whether fp32 eager's verdict says its step is launch-bound."""
    verdict = base.facts.get(Bottleneck)
    return verdict is not None and verdict.kind == "launch-bound"


def _paid(ratio: Speedup | None) -> bool:
    return ratio is not None and ratio.significant and ratio.low > 1.0


def _note(rung: Rung, ratio: Speedup | None, launch_bound: bool, over: str = "") -> str:
    """Say plainly when a lever does not pay (over `over`, its reference, where it has one),
    and why when the reason is known."""
    if ratio is None or _paid(ratio):
        return ""
    against = f" over {over}" if over else ""
    text = (
        f"does not pay{against or ' here'} ({ratio.text()})"
        if not ratio.significant
        else f"slower{' than ' + over if over else ''} ({ratio.text()})"
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


def stack_name(spec: RunSpec, base: RunSpec) -> str:
    """A configuration named by what it changes from `base`, in the order it applies: "bf16 +
    channels_last + compile"; another backend first, with its precision: "onnxruntime-cpu
    int8"."""
    switched = spec.backend != base.backend  # the backend's part names the precision
    parts = [f"{spec.backend} {spec.precision}"] if switched else []
    for lever in sorted(all_levers(), key=lambda lever: lever.stage):
        value = lever.value(spec)
        if value != lever.value(base) and not (switched and lever is find_lever("precision")):
            parts.append(spec.precision if lever.name == "precision" else lever.label(value))
    return " + ".join(p for p in parts if p) or BASELINE
