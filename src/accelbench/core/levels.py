"""Two levels of noise: between the processes of one configuration, and within each.

On a shared host a fresh process can run 10-40% faster or slower than the last one (measured
on an H200: per-process medians 139 to 201 it/s for one configuration), while the samples
within each process agree to a few percent. An interval over one process's samples says
nothing about the next process; an interval over the processes' own medians does, because each
process median carries both kinds of noise (its process's offset, and its samples' noise).

So the headline over several processes is the geometric mean of their medians, and its 95%
interval is Student's t over the logs of those medians: exact for normal process effects, and
honest with few processes (t with 2 degrees of freedom is 4.30, not 1.96). Logs make a rate's
interval and its time's interval the same interval inverted, and a ratio's a difference.
With one process there is no interval across processes at all, and we say so. How many
processes a configuration gets is a `RoundPolicy` (engine/rounds runs them).

Plain Python (no numpy or scipy): listing stored results computes one of these per result.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import UsageError

__all__ = [
    "DEFAULT_POLICY",
    "MIN_PROCESSES",
    "QUICK_ROUNDS",
    "QUICK_SECONDS",
    "QUICK_STEPS",
    "RoundPolicy",
    "Spread",
    "Interval",
    "log_interval",
    "t_quantile",
]

# The fewest processes an interval across processes can come from (Student's t, 1 degree of
# freedom: 12.7 standard errors wide, but true).
MIN_PROCESSES = 2
# Student's t, two-sided 95%, for 1..30 degrees of freedom (scipy.stats.t.ppf(0.975, df));
# a test checks them against scipy. Past 30, scipy, which a read-only listing never needs.
_T95 = (
    12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646, 2.3060, 2.2622, 2.2281,
    2.2010, 2.1788, 2.1604, 2.1448, 2.1314, 2.1199, 2.1098, 2.1009, 2.0930, 2.0860,
    2.0796, 2.0739, 2.0687, 2.0639, 2.0595, 2.0555, 2.0518, 2.0484, 2.0452, 2.0423,
)  # fmt: skip
# The variance of a median of n normal samples is about pi/2 times that of their mean.
_MEDIAN_EFFICIENCY = math.pi / 2
_MAD_TO_SD = 1.4826  # a normal distribution's sd over its median absolute deviation


def t_quantile(df: float) -> float:
    """Student's t at 97.5% (a two-sided 95% interval) for `df` degrees of freedom."""
    if df < 1:
        raise ValueError(f"degrees of freedom must be 1 or more, got {df}")
    if df == int(df) and df <= len(_T95):
        return _T95[int(df) - 1]
    from scipy.stats import t

    return float(t.ppf(0.975, df))


@dataclass(frozen=True)
class Interval:
    """A center and its 95% interval, from values on a log scale (rates, times, ratios)."""

    center: float
    low: float
    high: float
    count: int  # the values (processes, or pairs of processes) it comes from


def log_interval(values: Sequence[float]) -> Interval | None:
    """The geometric mean of positive `values` and its Student-t 95% interval over their logs;
    None with fewer than MIN_PROCESSES values."""
    if len(values) < MIN_PROCESSES:
        return None
    logs = [math.log(v) for v in values]
    mean = math.fsum(logs) / len(logs)
    half = t_quantile(len(logs) - 1) * statistics.stdev(logs) / math.sqrt(len(logs))
    return Interval(math.exp(mean), math.exp(mean - half), math.exp(mean + half), len(logs))


@dataclass(frozen=True)
class Spread:
    """How the noise of several processes' samples splits between the two levels.

    Relative figures (0.03 = 3%), as standard deviations on the log scale:
    - `between`: the spread of the per-process medians themselves;
    - `within`: the spread of single samples inside a process (robust: from the median
      absolute deviation, pooled over processes);
    - `within_share`: the share of the per-process medians' variance that the samples' own
      noise explains (the rest is the processes' own offsets). Below one half the spread
      between processes dominates: another run's processes may land about `between` away, and
      more processes, not longer ones, narrow the interval.
    """

    processes: int
    between: float
    within: float
    within_share: float

    @property
    def dominant(self) -> str:
        """ "between processes" or "within a process": which part the interval is made of."""
        return "within a process" if self.within_share >= 0.5 else "between processes"

    @classmethod
    def of(cls, per_process: Sequence[Sequence[float]]) -> Spread | None:
        """The spread of positive values grouped by process; None below MIN_PROCESSES, or
        where a process has a single value (its own spread is then unknown)."""
        if len(per_process) < MIN_PROCESSES or min(map(len, per_process)) < 2:
            return None
        logs = [[math.log(v) for v in values] for values in per_process]
        medians = [statistics.median(values) for values in logs]
        between_var = statistics.variance(medians)
        within_sd = math.sqrt(statistics.fmean([_robust_sd(values) ** 2 for values in logs]))
        # how much of the medians' variance their own samples' noise accounts for
        median_var = statistics.fmean(
            [_MEDIAN_EFFICIENCY * _robust_sd(values) ** 2 / len(values) for values in logs]
        )
        share = 1.0 if between_var <= 0 else min(1.0, median_var / between_var)
        return cls(len(per_process), math.sqrt(between_var), within_sd, share)


def _robust_sd(logs: Sequence[float]) -> float:
    """A normal-consistent sd from the median absolute deviation (0 for one value)."""
    if len(logs) < 2:
        return 0.0
    center = statistics.median(logs)
    return _MAD_TO_SD * statistics.median([abs(x - center) for x in logs])


@dataclass(frozen=True)
class RoundPolicy:
    """How many processes measure one configuration (engine/rounds runs them)."""

    fixed: int | None = None  # exactly this many; None: adaptive
    least: int = 3  # adaptive: the processes run before the count is decided
    most: int = 8  # adaptive: the most it may decide on
    target: float = 0.02  # adaptive: the interval's half-width sought, relative to the median
    # Seconds at least between the starts of a configuration's successive processes, so that
    # one run samples the host's slow states too (runs differ far more than processes of one
    # run on the lent H200: analysis/history). Idle time, not timing: --max-time excludes it.
    min_gap: float = 0.0

    def __post_init__(self) -> None:
        if self.fixed is not None and self.fixed < 1:
            raise UsageError(f"--rounds must be 1 or more, got {self.fixed}")
        if self.least < 1 or self.most < 1:
            raise UsageError(f"--max-rounds must be 1 or more, got {self.most}")
        if not 0 <= self.min_gap < math.inf:
            raise UsageError(f"--min-gap must be 0 or more seconds, got {self.min_gap}")
        if self.fixed is None and self.most < min(self.least, 2):
            raise UsageError(f"--max-rounds {self.most} is below the 2 an interval needs")

    def text(self) -> str:
        if self.fixed is not None:
            return f"{self.fixed} fixed"
        return f"adaptive, {min(self.least, self.most)} to {self.most}"


DEFAULT_POLICY = RoundPolicy()
# A quick run's (`run --quick`): the fewest processes an interval across them needs, the
# timed seconds in all, shared by a configuration's processes, and one step an it (seed-cnn's
# it of 20 steps took 14 s on a 2-core VM at load 14: the warm-up alone, two its a process,
# ran past any quick budget).
QUICK_ROUNDS = 2
QUICK_SECONDS = 1.0
QUICK_STEPS = 1
