"""Results side by side: speedups with confidence intervals, and regression checks.

A speedup is the ratio of two results' throughputs (samples/s, so that different batch sizes
and workloads compare fairly), each the geometric mean of its processes' medians. The process
is the unit of noise (core.levels), so the interval is taken over processes, on the log scale:
- two configurations of one sweep ran their processes side by side, pass by pass
  (engine/rounds): the ratio is taken within each pass, and Student's t over those ratios, so
  the host's drift, which moves both alike, cancels;
- otherwise (two sweeps, two machines) Welch's t over the two sets of process medians, its
  degrees of freedom rounded down (the wider, safer interval).
Below two processes or six timed samples on a side there is no interval, and the speedup says
what is missing rather than call anything significant. Where the interval holds 1.0 the
difference is not significant, and is marked so: seed 000's author could not tell a difference
from noise; this can.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..core.levels import MIN_PROCESSES, log_interval, t_quantile
from ..core.result import DEFAULT_BACKEND, Result, RunSpec, machine_of
from ..core.vocab import DEFAULT_MODE
from ..devices.kinds import BASELINE_DEVICE
from .facts import Rounds, Verification, partial

__all__ = [
    "BASE_DIMENSIONS",
    "DEVICE",
    "FASTEST",
    "OLDEST",
    "Dimension",
    "Change",
    "Comparison",
    "Row",
    "Speedup",
    "compare",
    "compare_runs",
    "speedup",
]

MIN_SAMPLES = 6  # timed samples on each side, over its processes, for any interval
# A baseline value meaning "whichever of the group has the most samples/s" (compare's default
# for configurations, and `--baseline-value fastest` for any dimension).
FASTEST = "fastest"
# The baseline of `compare --by run`: the configuration's earliest run (the one before the change).
OLDEST = "oldest"


@dataclass(frozen=True)
class Speedup:
    ratio: float  # candidate's samples/s over the baseline's
    low: float
    high: float
    no_interval: str = ""  # why there is none ("1 process: too few..."); then low 0, high inf
    method: str = ""  # how the interval was taken: paired pass by pass, or unpaired

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
            "method": self.method,
            **({"no_interval": self.no_interval} if self.no_interval else {}),
        }


def _process_rates(result: Result) -> list[float]:
    """Samples per second of each process: its median, over its own samples."""
    m = result.measurement
    assert m is not None
    return [p.rate.median * result.samples_per_block for p in m.per_process]


def speedup(
    candidate: Result,
    baseline: Result,
    spread_from: Result | None = None,
    include_partial: bool = False,
) -> Speedup:
    """Candidate over baseline, with a 95% interval over their processes: paired pass by pass
    where they ran side by side, else unpaired; none, saying why, with too few, or with a side
    measured in fewer processes than planned unless `include_partial` (analysis/facts.partial).

    `spread_from` (optimize's fp32 eager, measured in several processes) lends its spread
    between processes to a side measured in one: the same model on the same host is taken to
    vary from process to process as much (`_pooled`)."""
    a, b = _process_rates(candidate), _process_rates(baseline)
    center = _geometric_mean(a) / _geometric_mean(b)
    unfinished = _partial(candidate, baseline, include_partial)
    if unfinished:
        return Speedup(center, 0.0, float("inf"), unfinished)
    missing = _too_few(candidate, baseline)
    if missing and spread_from is not None and not _too_few(spread_from, spread_from):
        return _pooled(candidate, baseline, spread_from, center)
    if missing:
        return Speedup(center, 0.0, float("inf"), missing)
    pairs = _pairs(candidate, baseline)
    if len(pairs) >= MIN_PROCESSES:
        found = log_interval([x / y for x, y in pairs])
        assert found is not None
        how = f"paired: {len(pairs)} processes each, side by side"
        return Speedup(found.center, found.low, found.high, method=how)
    low, high = _welch(a, b)
    how = f"unpaired: {len(a)} and {len(b)} processes"
    return Speedup(center, center * low, center * high, method=how)


def _pooled(candidate: Result, baseline: Result, spread_from: Result, center: float) -> Speedup:
    """Student's t with one spread between processes for all (pooled over the results' own
    processes, `spread_from`'s among them): the interval a side of one process can have."""
    distinct = {id(r): r for r in (candidate, baseline, spread_from)}.values()
    squares, df = 0.0, 0
    for r in distinct:
        logs = [math.log(x) for x in _process_rates(r)]
        mean = math.fsum(logs) / len(logs)
        squares += math.fsum((x - mean) ** 2 for x in logs)
        df += len(logs) - 1
    na, nb = len(_process_rates(candidate)), len(_process_rates(baseline))
    half = t_quantile(df) * math.sqrt(squares / df * (1 / na + 1 / nb))
    how = f"pooled: {na} and {nb} processes, the spread between processes of {df + len(distinct)}"
    return Speedup(center, center * math.exp(-half), center * math.exp(half), method=how)


def _too_few(candidate: Result, baseline: Result) -> str:
    """What an interval would lack on either side, or ""."""
    for side, r in (("candidate", candidate), ("baseline", baseline)):
        m = r.measurement
        assert m is not None
        name = f"#{r.id}" if r.id is not None else f"the {side}"
        if m.processes < MIN_PROCESSES:
            return (
                f"{name} ran in {m.processes} process: too few to bound the spread between "
                f"processes (needs {MIN_PROCESSES} on each side)"
            )
        if len(m.samples) < MIN_SAMPLES:
            return f"{name} has {len(m.samples)} timed samples: too few (needs {MIN_SAMPLES})"
    return ""


def _partial(candidate: Result, baseline: Result, included: bool) -> str:
    """Which side was measured in fewer processes than planned, unless `included`, or ""."""
    for side, r in (("candidate", candidate), ("baseline", baseline)):
        found = None if included else partial(r)
        if found:
            name = f"#{r.id}" if r.id is not None else f"the {side}"
            return (
                f"{name} is partial, {found[0]} of {found[1]} planned processes (--resume "
                "completes it; --include-partial compares it as it is)"
            )
    return ""


def _pairs(candidate: Result, baseline: Result) -> list[tuple[float, float]]:
    """The two results' process rates that ran in the same pass of the same sweep."""
    ra, rb = candidate.facts.get(Rounds), baseline.facts.get(Rounds)
    if not candidate.sweep or candidate.sweep != baseline.sweep or ra is None or rb is None:
        return []
    by_pass_a = dict(zip(ra.passes, _process_rates(candidate), strict=False))
    by_pass_b = dict(zip(rb.passes, _process_rates(baseline), strict=False))
    return [(by_pass_a[n], by_pass_b[n]) for n in sorted(set(by_pass_a) & set(by_pass_b))]


def _geometric_mean(values: Sequence[float]) -> float:
    return math.exp(math.fsum(map(math.log, values)) / len(values))


def _welch(a: Sequence[float], b: Sequence[float]) -> tuple[float, float]:
    """The 95% interval of the ratio of two geometric means over its center, as factors:
    Welch's t on the logs, its degrees of freedom rounded down."""
    la, lb = [math.log(x) for x in a], [math.log(x) for x in b]
    va, vb = statistics.variance(la) / len(la), statistics.variance(lb) / len(lb)
    if va + vb == 0:
        return 1.0, 1.0
    df = (va + vb) ** 2 / (va**2 / (len(la) - 1) + vb**2 / (len(lb) - 1))
    half = t_quantile(max(1, math.floor(df))) * math.sqrt(va + vb)
    return math.exp(-half), math.exp(half)


@dataclass(frozen=True)
class Dimension:
    """Something results can differ in and be compared by (`compare --by NAME`)."""

    name: str
    read: Callable[[Result], str]  # this result's value, as a person reads it
    neutral: Callable[[RunSpec], RunSpec]  # the spec with this dimension blanked out
    baseline: str = ""  # the value the others are measured against; "" for the smallest,
    # FASTEST for the one with the most samples/s


def _base(name: str, field: str, read: Callable[[Result], str], baseline: str) -> Dimension:
    # any one value blanks a field out; a batch of 1 is one a RunSpec accepts
    blank: Any = 1 if field == "batch_size" else ""
    return Dimension(
        name, read, lambda spec: replace(spec, **({field: blank} if field else {})), baseline
    )


# The dimensions every result has; each lever adds its own (accelbench.levers.dimensions).
BASE_DIMENSIONS: dict[str, Dimension] = {
    d.name: d
    for d in (
        _base("device", "device", lambda r: r.spec.device, BASELINE_DEVICE),
        _base("machine", "", lambda r: machine_of(r.environment), ""),
        _base("mode", "mode", lambda r: r.spec.mode, DEFAULT_MODE),
        _base("workload", "workload", lambda r: r.spec.workload, ""),
        _base("batch", "batch_size", lambda r: str(r.spec.batch_size), ""),
        _base("backend", "backend", lambda r: r.spec.backend, DEFAULT_BACKEND),
        # each run of one configuration (its sweep id): "run, change something, run again"
        _base("run", "", lambda r: r.sweep, OLDEST),
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
    include_partial: bool = False,
) -> Comparison:
    """Group results that differ only in `by`; compare each with its group's baseline. With
    `within_sweep`, a result is compared only with results of its own sweep (measured side by
    side), and a configuration measured in several sweeps has a row for each. A partial
    result (analysis/facts.partial) gets no interval unless `include_partial`."""
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
        for value, r in sorted(members.items(), key=_sort_key(wanted)):
            ratio = None
            if base is not None and r is not base:
                ratio = speedup(r, base, include_partial=include_partial)
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
    if wanted == FASTEST:
        return max(members, key=lambda value: members[value].samples_per_second or 0.0)
    if wanted == OLDEST:
        return min(members, key=lambda value: _when(members[value]))
    matching = sorted(v for v in members if v.split("/")[-1] == wanted)
    if matching:
        return matching[0]
    return None if wanted else min(members, key=_order)


def _sort_key(wanted: str) -> Callable[[tuple[str, Result]], Any]:
    """Rows against the fastest read fastest first; others in the values' order."""
    if wanted == FASTEST:
        return lambda item: -(item[1].samples_per_second or 0.0)
    if wanted == OLDEST:
        return lambda item: _when(item[1])
    return lambda item: _order(item[0])


def _when(result: Result) -> tuple[str, int]:
    """When a result was stored (its id breaks a tie within one second)."""
    return result.created_at, result.id or 0


def _order(value: str) -> tuple[int, float, str]:
    """Numbers (batch sizes, thread counts) in numeric order, before names in text order."""
    try:
        return (0, float(value), "")
    except ValueError:
        return (1, 0.0, value)


# What narrows a run-against-run interval, for a verdict it cannot decide.
_DECIDABLE_BY = (
    "more processes (run --rounds), processes spread over time (run --min-gap), a quieter "
    "machine, or the configuration's history (compare --candidate RUN without --baseline)"
)


@dataclass(frozen=True)
class Change:
    """One configuration measured in the baseline run, and what the candidate run made of it."""

    spec: RunSpec
    baseline: Result
    candidate: Result
    speedup: Speedup | None  # None when the candidate failed
    regression: bool
    threshold: float = 0.05

    @property
    def verdict(self) -> str:
        """REGRESSION; faster (significant, above 1); ok only where the interval rules out a
        slowdown past the threshold (its low end at or above 1 − threshold); else
        undetermined: too few processes or samples, or an interval too wide to tell."""
        if self.regression:
            return "REGRESSION"
        s = self.speedup
        if s is None or s.no_interval:
            return "undetermined"
        if s.significant and s.ratio > 1:
            return "faster"
        return "ok" if s.low >= 1 - self.threshold else "undetermined"

    @property
    def detectable(self) -> float | None:
        """The smallest slowdown this pair's data could detect (0.2 = 20%): the interval's
        half-width on the log scale, as a slowdown; None without an interval."""
        s = self.speedup
        if s is None or s.no_interval or s.ratio <= 0:
            return None
        return 1 - s.low / s.ratio

    @property
    def why(self) -> str:
        """For an undetermined verdict, why, and what would make it decidable; else ""."""
        if self.verdict != "undetermined":
            return ""
        assert self.speedup is not None
        if self.speedup.no_interval:
            return f"{self.speedup.no_interval}; decidable with {_DECIDABLE_BY}"
        return (
            f"this data detects only a slowdown of {self.detectable:.1%} or more, not "
            f"{self.threshold:.0%}; decidable with {_DECIDABLE_BY}"
        )


def compare_runs(
    baseline: Sequence[Result],
    candidate: Sequence[Result],
    threshold: float,
    include_partial: bool = False,
) -> list[Change]:
    """Match configurations between two runs. A regression is a significant slowdown of more
    than `threshold` (0.05 for 5%), or a failure where the baseline succeeded; ok needs an
    interval that rules out a slowdown past the threshold; anything else (too few processes
    or samples, an interval too wide, or a partial side unless `include_partial`) is
    undetermined, never a pass."""
    before = {r.spec: r for r in reversed(baseline) if r.measurement}  # newest wins
    changes = []
    for r in candidate:
        base = before.get(r.spec)
        if base is None or r.facts.get(Verification) is not None:  # a verify run is not a timing
            continue
        if r.measurement is None:
            changes.append(Change(r.spec, base, r, None, True, threshold))
            continue
        ratio = speedup(r, base, include_partial=include_partial)
        regression = ratio.ratio < 1 - threshold and ratio.high < 1.0
        changes.append(Change(r.spec, base, r, ratio, regression, threshold))
    return changes
