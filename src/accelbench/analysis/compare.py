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
from typing import Any

import numpy as np

from ..core.result import Result, RunSpec, machine_of
from ..devices.kinds import BASELINE_DEVICE
from ..errors import UsageError

__all__ = [
    "DIMENSIONS",
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

    @property
    def significant(self) -> bool:
        return not self.low <= 1.0 <= self.high

    def text(self) -> str:
        mark = "" if self.significant else " (n.s.)"
        return f"{self.ratio:.2f}x [{self.low:.2f}–{self.high:.2f}]{mark}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "ratio": self.ratio,
            "ci95_low": self.low,
            "ci95_high": self.high,
            "significant": self.significant,
        }


def _rates(result: Result) -> np.ndarray:
    """Samples per second of each timed sample: comparable across batch sizes and workloads."""
    m = result.measurement
    assert m is not None
    return m.repeat * result.samples_per_block / np.asarray(m.samples, dtype=float)


def speedup(candidate: Result, baseline: Result, seed: int = 0) -> Speedup:
    """Candidate over baseline, per-sample rates, with a bootstrap 95% interval."""
    from scipy.stats import bootstrap

    a, b = _rates(candidate), _rates(baseline)
    ratio = float(np.median(a) / np.median(b))
    if len(a) < 2 or len(b) < 2:  # nothing to resample: the interval is unknown, say so
        return Speedup(ratio, 0.0, float("inf"))
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


# What --by can compare, and how to read it off a result.
DIMENSIONS: dict[str, Callable[[Result], str]] = {
    "device": lambda r: r.spec.device,
    "machine": lambda r: machine_of(r.environment),
    "precision": lambda r: r.spec.precision,
    "mode": lambda r: r.spec.mode,
    "workload": lambda r: r.spec.workload,
    "batch": lambda r: str(r.spec.batch_size),
    "compile": lambda r: r.spec.compile or "off",
    "memory-format": lambda r: "channels_last" if r.spec.channels_last else "contiguous",
    "cuda-graphs": lambda r: "on" if r.spec.cuda_graphs else "off",
    "threads": lambda r: str(r.spec.threads or "default"),
    "backend": lambda r: r.spec.backend,
    "pruning": lambda r: r.spec.pruning or "none",
}
_NEUTRAL: dict[str, dict[str, Any]] = {
    "device": {"device": ""},
    "precision": {"precision": ""},
    "mode": {"mode": ""},
    "workload": {"workload": ""},
    "batch": {"batch_size": 0},
    "compile": {"compile": ""},
    "memory-format": {"channels_last": False},
    "cuda-graphs": {"cuda_graphs": False},
    "threads": {"threads": 0},
    "backend": {"backend": ""},
    "pruning": {"pruning": ""},
    "machine": {},
}
_DEFAULT_BASELINE = {
    "device": BASELINE_DEVICE,
    "precision": "fp32",
    "mode": "train",
    "compile": "off",
    "memory-format": "contiguous",
    "cuda-graphs": "off",
    "backend": "torch",
    "pruning": "none",
}


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


def compare(results: Sequence[Result], by: str, baseline_value: str | None = None) -> Comparison:
    """Group results that differ only in `by`; compare each with its group's baseline."""
    if by not in DIMENSIONS:
        raise UsageError(f"cannot compare by {by!r}; valid: {', '.join(DIMENSIONS)}")
    value_of = _value_reader(results, by)
    groups: dict[tuple[RunSpec, str], dict[str, Result]] = {}
    for r in results:  # newest first: the first result of a configuration wins
        if r.measurement is None:
            continue
        key = (replace(r.spec, **_NEUTRAL[by]), _context(r, by))
        groups.setdefault(key, {}).setdefault(value_of(r), r)
    wanted = baseline_value or _DEFAULT_BASELINE.get(by, "")
    rows = []
    for (group, _), members in groups.items():
        base_value = _pick_baseline(members, wanted)
        base = members.get(base_value) if base_value else None
        for value, r in sorted(members.items(), key=lambda item: _order(item[0])):
            ratio = speedup(r, base) if base is not None and r is not base else None
            rows.append(Row(group, value, r, base, ratio))
    return Comparison(by, tuple(rows), wanted)


def _value_reader(results: Sequence[Result], by: str) -> Callable[[Result], str]:
    read = DIMENSIONS[by]
    machines = {machine_of(r.environment) for r in results}
    if by == "device" and len(machines) > 1:  # two machines' CPUs are different devices
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
