"""Results side by side: speedups with bootstrap confidence intervals, and regression checks.

A speedup is the ratio of two medians of per-sample throughputs (samples/s, so that different
batch sizes and workloads compare fairly). Its 95% interval comes from the raw
samples by the bootstrap (scipy's, percentile method): resample each side, take the ratio of the
medians, repeat. Where the interval holds 1.0 the difference is not significant, and is marked
so: seed 000's author could not tell a difference from noise; this can.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # numpy loads when a speedup is computed, not for --help
    import numpy as np

from ..core.result import DEFAULT_BACKEND, Result, RunSpec, machine_of
from ..devices.kinds import BASELINE_DEVICE

__all__ = [
    "BASE_DIMENSIONS",
    "DEVICE",
    "Dimension",
    "Change",
    "Comparison",
    "Row",
    "Speedup",
    "compare",
    "compare_runs",
    "speedup",
]

RESAMPLES = 2000


@dataclass(frozen=True)
class Speedup:
    ratio: float  # candidate's median samples/s over the baseline's
    low: float
    high: float
    no_interval: str = ""  # why there is none ("1 sample: too few..."); then low 0, high inf

    @property
    def significant(self) -> bool:
        return not self.low <= 1.0 <= self.high

    def text(self) -> str:
        if self.no_interval:
            return f"{self.ratio:.2f}x (no interval: {self.no_interval})"
        mark = "" if self.significant else " (n.s.)"
        return f"{self.ratio:.2f}x [{self.low:.2f}–{self.high:.2f}]{mark}"

    def to_dict(self) -> dict[str, Any]:
        bounded = not self.no_interval  # JSON has no infinity
        return {
            "ratio": self.ratio,
            "ci95_low": self.low if bounded else None,
            "ci95_high": self.high if bounded else None,
            "significant": self.significant,
            **({"no_interval": self.no_interval} if self.no_interval else {}),
        }


def _rates(result: Result) -> np.ndarray:
    """Samples per second of each timed sample: comparable across batch sizes and workloads."""
    import numpy as np

    m = result.measurement
    assert m is not None
    return m.repeat * result.samples_per_block / np.asarray(m.samples, dtype=float)


def speedup(candidate: Result, baseline: Result, seed: int = 0) -> Speedup:
    """Candidate over baseline, per-sample rates, with a bootstrap 95% interval."""
    import numpy as np
    from scipy.stats import bootstrap

    a, b = _rates(candidate), _rates(baseline)
    ratio = float(np.median(a) / np.median(b))
    if len(a) < 2 or len(b) < 2:  # nothing to resample: the interval is unknown, say so
        fewest = min(len(a), len(b))
        why = f"{fewest} timed sample{'s' if fewest != 1 else ''}: too few to resample"
        return Speedup(ratio, 0.0, float("inf"), why)
    result = bootstrap(
        (a, b),
        lambda x, y, axis: np.median(x, axis=axis) / np.median(y, axis=axis),
        n_resamples=RESAMPLES,
        method="percentile",
        vectorized=True,
        random_state=np.random.default_rng(seed),
    )
    interval = result.confidence_interval
    return Speedup(ratio, float(interval.low), float(interval.high))


@dataclass(frozen=True)
class Dimension:
    """Something results can differ in and be compared by (`compare --by NAME`)."""

    name: str
    read: Callable[[Result], str]  # this result's value, as a person reads it
    neutral: Callable[[RunSpec], RunSpec]  # the spec with this dimension blanked out
    baseline: str = ""  # the value the others are measured against; "" for the smallest


def _base(name: str, field: str, read: Callable[[Result], str], baseline: str) -> Dimension:
    blank: Any = 0 if field == "batch_size" else ""
    return Dimension(
        name, read, lambda spec: replace(spec, **({field: blank} if field else {})), baseline
    )


# The dimensions every result has; each lever adds its own (accelbench.levers.dimensions).
BASE_DIMENSIONS: dict[str, Dimension] = {
    d.name: d
    for d in (
        _base("device", "device", lambda r: r.spec.device, BASELINE_DEVICE),
        _base("machine", "", lambda r: machine_of(r.environment), ""),
        _base("mode", "mode", lambda r: r.spec.mode, "train"),
        _base("workload", "workload", lambda r: r.spec.workload, ""),
        _base("batch", "batch_size", lambda r: str(r.spec.batch_size), ""),
        _base("backend", "backend", lambda r: r.spec.backend, DEFAULT_BACKEND),
    )
}
DEVICE = BASE_DIMENSIONS["device"]


@dataclass(frozen=True)
class Row:
    """One result in a comparison, against its group's baseline."""

    group: RunSpec  # the configuration with the compared dimension blanked out
    value: str  # this result's value of the compared dimension
    result: Result
    baseline: Result | None
    speedup: Speedup | None


@dataclass(frozen=True)
class Comparison:
    by: str
    rows: tuple[Row, ...]
    baseline_value: str


def compare(
    results: Sequence[Result],
    by: Dimension,
    baseline_value: str | None = None,
    within_sweep: bool = False,
) -> Comparison:
    """Group results that differ only in `by`; compare each with its group's baseline. With
    `within_sweep`, a result is compared only with results of its own sweep (measured side by
    side), and a configuration measured in several sweeps has a row for each."""
    value_of = _value_reader(results, by)
    groups: dict[tuple[RunSpec, str], dict[str, Result]] = {}
    for r in results:  # newest first: the first result of a configuration wins
        if r.measurement is None:
            continue
        context = _context(r, by.name) + (f"@{r.sweep}" if within_sweep else "")
        key = (by.neutral(r.spec), context)
        groups.setdefault(key, {}).setdefault(value_of(r), r)
    wanted = baseline_value or by.baseline
    rows = []
    for (group, _), members in groups.items():
        base_value = _pick_baseline(members, wanted)
        base = members.get(base_value) if base_value else None
        for value, r in sorted(members.items(), key=lambda item: _order(item[0])):
            ratio = speedup(r, base) if base is not None and r is not base else None
            rows.append(Row(group, value, r, base, ratio))
    return Comparison(by.name, tuple(rows), wanted)


def _value_reader(results: Sequence[Result], by: Dimension) -> Callable[[Result], str]:
    read = by.read
    machines = {machine_of(r.environment) for r in results if r.measurement is not None}
    if by is DEVICE and len(machines) > 1:  # two machines' "cpu" are different devices
        return lambda r: f"{machine_of(r.environment)}/{read(r)}"
    return read


def _context(result: Result, by: str) -> str:
    """What else must match: the machine, unless machines or devices are being compared."""
    return "" if by in ("machine", "device") else machine_of(result.environment)


def _pick_baseline(members: dict[str, Result], wanted: str) -> str | None:
    if wanted in members:
        return wanted
    matching = sorted(v for v in members if v.split("/")[-1] == wanted)
    if matching:
        return matching[0]
    return None if wanted else min(members, key=_order)


def _order(value: str) -> tuple[int, float, str]:
    """Numbers (batch sizes, thread counts) in numeric order, before names in text order."""
    try:
        return (0, float(value), "")
    except ValueError:
        return (1, 0.0, value)


@dataclass(frozen=True)
class Change:
    """One configuration measured in the baseline run, and what the candidate run made of it."""

    spec: RunSpec
    baseline: Result
    candidate: Result
    speedup: Speedup | None  # None when the candidate failed
    regression: bool


def compare_runs(
    baseline: Sequence[Result], candidate: Sequence[Result], threshold: float
) -> list[Change]:
    """Match configurations between two runs. A regression is a significant slowdown of more
    than `threshold` (0.05 for 5%), or a failure where the baseline succeeded."""
    before = {r.spec: r for r in reversed(baseline) if r.measurement}  # newest wins
    changes = []
    for r in candidate:
        base = before.get(r.spec)
        if base is None or r.verification is not None:  # a verify run is not a timing
            continue
        if r.measurement is None:
            changes.append(Change(r.spec, base, r, None, True))
            continue
        ratio = speedup(r, base)
        regression = ratio.ratio < 1 - threshold and ratio.high < 1.0
        changes.append(Change(r.spec, base, r, ratio, regression))
    return changes
