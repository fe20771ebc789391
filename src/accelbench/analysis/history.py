"""A configuration's history on a machine: its earlier runs, the spread between them, and a
prediction interval for the next run; and the gate that judges a run against it.

Three levels of noise: samples within a process, processes within a run, runs over time. On the
lent H200 the host's fast or slow state outlasts a run (three processes of one run agree within
3% while runs differ 31-64%), so an interval over one run's processes says nothing about the
next run. The history does: each run's rate (samples/s, the geometric mean of its processes'
medians, as analysis/compare takes it) carries all three levels, and the runs' rates, on the log
scale, are taken as independent draws from one normal distribution. The prediction interval for
the next run is then mean ± t(n−1) · s · sqrt(1 + 1/n) over the last n runs (the look-back
window): s the spread between runs, 1/n the uncertainty of their mean. Its half-width, as a
percentage each side, is the smallest change the history can detect.

Torch-free: `compare`, `results` and `report` read histories from the store.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ..core.levels import t_quantile
from ..core.result import Result, RunSpec, machine_of
from .facts import Verification

__all__ = [
    "DEFAULT_WINDOW",
    "MIN_HISTORY",
    "History",
    "Judgement",
    "Placement",
    "Prediction",
    "Run",
    "histories",
    "history_before",
    "is_timing",
    "judge",
    "judge_run",
    "key_of",
    "narrowing",
    "placements",
    "predict",
    "runs_needed",
]

# The fewest earlier runs a prediction is made from. With n runs the interval is
# t(n−1)·sqrt(1 + 1/n) spreads wide each side: 15.6 at 2 runs, 3.0 at 5, 2.2 at 20; below 5 it
# is so wide that it detects nothing a gate is asked about, and a spread estimated from fewer
# than 4 degrees of freedom is itself unreliable by a factor of two or more.
MIN_HISTORY = 5
DEFAULT_WINDOW = 20  # the look-back: older runs may describe a machine that has since changed
_MOST_RUNS_SUGGESTED = 200  # past this, more runs is not an answer worth printing

Key = tuple[RunSpec, str]  # a configuration on a machine


@dataclass(frozen=True)
class Run:
    """One run of a configuration: its rate and the interval over its own processes."""

    result: Result
    rate: float  # samples/s: the geometric mean of its processes' medians
    low: float | None  # the within-run 95% CI, samples/s; None with one process or few samples
    high: float | None

    @classmethod
    def of(cls, result: Result) -> Run:
        m = result.measurement
        assert m is not None  # only measured results make a history
        per = result.samples_per_block
        low, high = m.rate.ci_low, m.rate.ci_high
        return cls(
            result,
            m.rate.median * per,
            None if low is None else low * per,
            None if high is None else high * per,
        )


@dataclass(frozen=True)
class Prediction:
    """Where the next run should land, from `runs` earlier runs (95%, log scale)."""

    runs: int
    center: float  # samples/s: the geometric mean of the runs' rates
    low: float
    high: float
    spread: float  # the sd of the runs' log rates (0.05 ≈ 5% between runs)

    @property
    def slowdown(self) -> float:
        """The smallest slowdown this history can detect (0.08 = 8%): the band's low side."""
        return 1 - self.low / self.center

    @property
    def speedup(self) -> float:
        """The smallest speedup it can detect: the band's high side."""
        return self.high / self.center - 1

    def holds(self, rate: float) -> bool:
        return self.low <= rate <= self.high

    def to_dict(self) -> dict[str, float | int]:
        return {
            "runs": self.runs,
            "center": self.center,
            "low": self.low,
            "high": self.high,
            "spread_between_runs": self.spread,
            "detectable_slowdown": self.slowdown,
            "detectable_speedup": self.speedup,
        }


def predict(rates: Sequence[float]) -> Prediction | None:
    """The 95% prediction interval for the next run from earlier runs' rates (samples/s);
    None below MIN_HISTORY runs."""
    if len(rates) < MIN_HISTORY:
        return None
    logs = [math.log(r) for r in rates]
    n, mean, s = len(logs), statistics.fmean(logs), statistics.stdev(logs)
    half = t_quantile(n - 1) * s * math.sqrt(1 + 1 / n)
    return Prediction(n, math.exp(mean), math.exp(mean - half), math.exp(mean + half), s)


def runs_needed(spread: float, threshold: float) -> int | None:
    """How many earlier runs at this spread would detect a slowdown of `threshold`; None when
    no number would (even a mean known exactly leaves 1.96 spreads of the next run's own)."""
    allowed = -math.log(1 - threshold)  # the half-width, on the log scale, the threshold allows
    if spread == 0:
        return MIN_HISTORY
    for n in range(MIN_HISTORY, _MOST_RUNS_SUGGESTED + 1):
        if t_quantile(n - 1) * spread * math.sqrt(1 + 1 / n) <= allowed:
            return n
    return None


@dataclass(frozen=True)
class History:
    """A configuration's runs on one machine before some moment, oldest first, in the window."""

    spec: RunSpec
    machine: str
    runs: tuple[Run, ...]

    @property
    def prediction(self) -> Prediction | None:
        return predict([run.rate for run in self.runs])

    def to_dict(self) -> dict[str, object]:
        found = self.prediction
        return {
            "machine": self.machine,
            "earlier_runs": len(self.runs),
            "needs": MIN_HISTORY,
            "prediction": None if found is None else found.to_dict(),
        }


def is_timing(result: Result) -> bool:
    """A measured run that a history holds: status ok, with samples, not a verify result."""
    return (
        result.status == "ok"
        and result.measurement is not None
        and result.facts.get(Verification) is None
    )


def key_of(result: Result) -> Key:
    return (result.spec, machine_of(result.environment))


def histories(stored: Iterable[Result]) -> dict[Key, list[Result]]:
    """Stored timings grouped by configuration and machine, each oldest first."""
    grouped: dict[Key, list[Result]] = {}
    for r in stored:
        if is_timing(r):
            grouped.setdefault(key_of(r), []).append(r)
    for runs in grouped.values():
        runs.sort(key=_when)
    return grouped


def _when(result: Result) -> tuple[str, int]:
    # created_at is UTC to the second; the store's id orders results made in the same second
    return (result.created_at, result.id if result.id is not None else -1)


def history_before(
    candidate: Result, grouped: dict[Key, list[Result]], window: int = DEFAULT_WINDOW
) -> History:
    """The candidate's configuration's runs on its machine made before it, the last `window`."""
    spec, machine = key_of(candidate)
    earlier = [
        r
        for r in grouped.get((spec, machine), [])
        if r.uid != candidate.uid and _when(r) < _when(candidate)
    ]
    return History(spec, machine, tuple(Run.of(r) for r in earlier[-window:]))


@dataclass(frozen=True)
class Judgement:
    """A candidate run against its configuration's history: the gate's verdict and why."""

    candidate: Result
    history: History
    threshold: float
    verdict: str  # REGRESSION, faster, ok or undetermined
    why: str  # what decided it; for undetermined, what would make it decidable

    @property
    def change(self) -> float | None:
        """The candidate's rate over the history's center, less 1 (-0.1 = 10% slower)."""
        found = self.history.prediction
        if found is None or self.candidate.measurement is None:
            return None
        return Run.of(self.candidate).rate / found.center - 1


def judge(candidate: Result, history: History, threshold: float) -> Judgement:
    """REGRESSION below the prediction interval and slower than `threshold` (or a failure
    where the configuration ran before); faster above it; ok inside it when the history can
    detect a slowdown of the threshold's size; else undetermined, saying why."""
    found = history.prediction
    if candidate.measurement is None or not is_timing(candidate):
        if history.runs:
            return Judgement(candidate, history, threshold, "REGRESSION", _failed(candidate))
        return Judgement(candidate, history, threshold, "undetermined", "no earlier run")
    if found is None:
        why = f"{len(history.runs)} earlier runs, needs {MIN_HISTORY}"
        return Judgement(candidate, history, threshold, "undetermined", why)
    rate = Run.of(candidate).rate
    if rate < found.low and rate < found.center * (1 - threshold):
        why = f"{1 - rate / found.center:.1%} slower, below the history's interval"
        return Judgement(candidate, history, threshold, "REGRESSION", why)
    if rate > found.high:
        why = f"{rate / found.center - 1:.1%} faster, above the history's interval"
        return Judgement(candidate, history, threshold, "faster", why)
    if found.slowdown > threshold:
        return Judgement(candidate, history, threshold, "undetermined", _too_wide(found, threshold))
    if rate < found.low:  # a change the history can see, too small to be a regression
        why = f"{1 - rate / found.center:.1%} slower, below the interval but within {threshold:.0%}"
    else:
        why = f"inside the history's interval, which detects a slowdown of {found.slowdown:.1%}"
    return Judgement(candidate, history, threshold, "ok", why)


def _failed(candidate: Result) -> str:
    if candidate.status == "ok":
        return "it has no timing where earlier runs had one"
    return f"{candidate.status} where earlier runs measured: {candidate.error}"


def _too_wide(found: Prediction, threshold: float) -> str:
    """Why a history cannot decide at this threshold, and what would make it decidable."""
    head = (
        f"the history ({found.runs} runs, sd {found.spread:.1%} between them) detects only "
        f"a slowdown of {found.slowdown:.1%} or more, not {threshold:.0%}"
    )
    needed = runs_needed(found.spread, threshold)
    spread_out = "processes spread over time (run --min-gap), or a quieter machine"
    if needed is None:
        return f"{head}; no number of runs would at this spread: {spread_out}"
    return f"{head}; decidable with about {needed} runs at this spread, or {spread_out}"


def judge_run(
    candidates: Sequence[Result], stored: Iterable[Result], threshold: float, window: int
) -> list[Judgement]:
    """Each configuration of a candidate run (its newest result of each) against the history
    of that configuration on the same machine before it."""
    grouped = histories(stored)
    newest: dict[Key, Result] = {}
    for r in candidates:
        if r.facts.get(Verification) is not None:  # a verify run is not a timing
            continue
        if key_of(r) not in newest or _when(newest[key_of(r)]) < _when(r):
            newest[key_of(r)] = r
    return [
        judge(r, history_before(r, grouped, window), threshold)
        for r in sorted(newest.values(), key=_when)
    ]


@dataclass(frozen=True)
class Placement:
    """Where one run landed against the runs of its configuration on its machine before it:
    shown beside the run's own interval by `run` and `results`."""

    earlier: int  # earlier runs in the window
    prediction: Prediction | None  # None below MIN_HISTORY earlier runs
    rate: float  # this run's samples/s

    @property
    def inside(self) -> bool | None:
        return None if self.prediction is None else self.prediction.holds(self.rate)

    def to_dict(self) -> dict[str, object]:
        found = self.prediction
        return {
            "earlier_runs": self.earlier,
            "needs": MIN_HISTORY,
            "prediction": None if found is None else found.to_dict(),
            "inside": self.inside,
        }


def placements(
    results: Sequence[Result],
    stored: Iterable[Result],
    window: int = DEFAULT_WINDOW,
    complete: bool = True,
) -> dict[str, Placement]:
    """Each measured result's placement against its earlier runs, by uid; a result with no
    earlier run of its configuration on its machine has none. Where `stored` is only the
    newest part of the store (`complete` false), a result with fewer than `window` earlier runs
    in it has none either: older ones may be stored beyond it (results are stored in the order
    they were made, so a full window found there is the last one)."""
    grouped = histories(stored)
    found = {}
    for r in results:
        if not is_timing(r):
            continue
        history = history_before(r, grouped, window)
        if history.runs and (complete or len(history.runs) >= window):
            found[r.uid] = Placement(len(history.runs), history.prediction, Run.of(r).rate)
    return found


def narrowing(results: Sequence[Result]) -> dict[str, Any]:
    """The spec fields all `results` share: a history query narrowed by them reads only what
    could be their history (one query per command, the rest filtered here)."""
    shared = {}
    for name in ("workload", "device", "mode", "precision", "backend"):
        values = {getattr(r.spec, name) for r in results}
        if len(values) == 1:
            shared[name] = values.pop()
    return shared
