"""Statistics over raw timing samples.

A `Measurement` keeps every timed block's duration; everything else (median, spread, confidence
interval, noise warnings) is derived from them, so a stored result can always be re-analysed.

The 95% confidence interval of the median is the distribution-free order-statistic interval:
for n sorted samples it is [x(k), x(n-k+1)] with the largest k whose binomial coverage is still
at least 95%. It needs no assumption about the shape of the timing distribution (which is
skewed: interruptions only ever make a block slower), and it does not exist below 6 samples,
which we say rather than invent one. That interval holds within one process only: where the
samples come from several processes, the interval is taken across them (`core.levels`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from fractions import Fraction
from functools import cached_property, lru_cache
from typing import TYPE_CHECKING

from .levels import Spread, log_interval

if TYPE_CHECKING:  # statistics take numpy arrays too, but never import numpy
    from collections.abc import Sequence

    import numpy as np

__all__ = ["Measurement", "Summary", "median_ci", "summarize", "NOISY_CI_FRACTION"]

CONFIDENCE = 0.95
# Above this CI half-width, relative to the median, a run is flagged as noisy.
NOISY_CI_FRACTION = 0.05
EXACT_UP_TO = 20_000  # samples: up to it the median's interval needs no scipy (60 ms at most)


@dataclass(frozen=True)
class Summary:
    """Order statistics of one set of values (seconds, or rates)."""

    n: int
    median: float
    mean: float
    iqr: float
    p10: float
    p90: float
    ci_low: float | None
    ci_high: float | None
    # How many processes the values came from. With several, `median` is the geometric mean
    # of their medians and the CI Student's t over them (core.levels); the rest is pooled.
    processes: int = 1

    @property
    def ci_half_width_fraction(self) -> float | None:
        """Half the CI's width over the median; None when there is no CI."""
        if self.ci_low is None or self.ci_high is None or self.median == 0:
            return None
        return (self.ci_high - self.ci_low) / 2 / abs(self.median)

    def to_dict(self) -> dict[str, float | int | None]:
        return {
            "n": self.n,
            "median": self.median,
            "mean": self.mean,
            "iqr": self.iqr,
            "p10": self.p10,
            "p90": self.p90,
            "ci95_low": self.ci_low,
            "ci95_high": self.ci_high,
            "processes": self.processes,
        }


def median_ci(
    values: Sequence[float] | np.ndarray, confidence: float = CONFIDENCE
) -> tuple[float, float] | None:
    """Distribution-free confidence interval of the median, or None with too few values."""
    ordered = sorted(map(float, values))
    n = len(ordered)
    # The interval runs from the (k+1)-th smallest to the (k+1)-th largest value (k 0-based);
    # it misses the median on one side with probability P(Binomial(n, 1/2) <= k), which must
    # stay within alpha. Take the largest such k: the narrowest interval with the coverage.
    k = _order_rank(n, (1 - confidence) / 2)
    if k < 0:
        return None
    return ordered[k], ordered[n - 1 - k]


@lru_cache(maxsize=256)
def _order_rank(n: int, alpha: float) -> int:
    """The largest k with P(Binomial(n, 1/2) <= k) <= alpha, or -1 when even k = 0 exceeds it.

    Exact, in integers (the sum of C(n, i) for i <= k against alpha * 2^n), and cached per n:
    listing stored results computes one interval per result, and importing scipy.stats for it
    would cost a read-only command more than a second. Past EXACT_UP_TO samples the integers
    grow large, and scipy's binomial takes over."""
    if n > EXACT_UP_TO:
        from scipy.stats import binom

        k = int(binom.ppf(alpha, n, 0.5))
        return k - 1 if binom.cdf(k, n, 0.5) > alpha else k
    budget = Fraction(alpha) * 2**n
    total, term, k = 0, 1, -1  # term is C(n, i)
    for i in range(n // 2 + 1):
        total += term
        if total > budget:
            break
        k = i
        term = term * (n - i) // (i + 1)
    return k


def summarize(values: Sequence[float] | np.ndarray) -> Summary:
    """Order statistics in plain Python: listing stored results then needs no numpy import
    (a seventh of a second, more than the listing itself)."""
    ordered = sorted(map(float, values))
    if not ordered:
        raise ValueError("no samples to summarize")
    q10, q25, q50, q75, q90 = (_percentile(ordered, q) for q in (10, 25, 50, 75, 90))
    ci = median_ci(ordered)
    return Summary(
        n=len(ordered),
        median=q50,
        mean=math.fsum(ordered) / len(ordered),
        iqr=q75 - q25,
        p10=q10,
        p90=q90,
        ci_low=ci[0] if ci else None,
        ci_high=ci[1] if ci else None,
    )


def _percentile(ordered: Sequence[float], percent: float) -> float:
    """numpy.percentile's default ("linear") of sorted values, computed as numpy does."""
    q = percent / 100
    position = (len(ordered) - 1) * q
    below = min(int(math.floor(position)), len(ordered) - 1)
    above = min(below + 1, len(ordered) - 1)
    t = position - below
    low, high = ordered[below], ordered[above]
    # numpy's lerp, from the nearer end for accuracy
    return high - (high - low) * (1 - t) if t >= 0.5 else low + (high - low) * t


@dataclass(frozen=True)
class Measurement:
    """Raw durations of the timed samples (seconds), plus the warm-up blocks kept aside.

    Each timed sample is `repeat` blocks run back to back (1 unless the stop rule grouped short
    blocks so that synchronizing at every boundary costs nothing measurable); statistics are
    per block.

    `rounds` says which samples came from which process: one (timed samples, warm-up blocks)
    pair per process, in the order they ran; the samples and warm-ups are those processes'
    in that order. Empty means one process (every result stored before processes were
    repeated). With several processes the statistics are two-level (`core.levels`): the
    median is the geometric mean of the per-process medians, its interval Student's t over
    them; the IQR and percentiles stay those of all samples.
    """

    samples: tuple[float, ...]
    warmup: tuple[float, ...] = ()
    repeat: int = 1
    rounds: tuple[tuple[int, int], ...] = ()

    def __post_init__(self) -> None:
        if self.rounds and (
            sum(n for n, _ in self.rounds) != len(self.samples)
            or sum(w for _, w in self.rounds) != len(self.warmup)
            or min(n for n, _ in self.rounds) < 1
        ):
            raise ValueError(
                f"rounds {list(self.rounds)} do not split {len(self.samples)} samples and "
                f"{len(self.warmup)} warm-ups, each process with at least one sample"
            )

    @property
    def processes(self) -> int:
        """How many processes the samples came from."""
        return max(1, len(self.rounds))

    @cached_property
    def per_process(self) -> tuple[Measurement, ...]:
        """Each process's own samples and warm-ups, in the order they ran."""
        if len(self.rounds) < 2:
            return (Measurement(self.samples, self.warmup, self.repeat),)
        out, at, warm = [], 0, 0
        for n, w in self.rounds:
            part = Measurement(self.samples[at : at + n], self.warmup[warm : warm + w], self.repeat)
            out.append(part)
            at, warm = at + n, warm + w
        return tuple(out)

    def with_process(self, other: Measurement) -> Measurement:
        """These samples and another process's after them (`other` is one process's)."""
        if other.repeat != self.repeat:
            raise ValueError(f"a process grouped {other.repeat} blocks a sample, not {self.repeat}")
        before = self.rounds or ((len(self.samples), len(self.warmup)),)
        return Measurement(
            self.samples + other.samples,
            self.warmup + other.warmup,
            self.repeat,
            (*before, (len(other.samples), len(other.warmup))),
        )

    @cached_property
    def time(self) -> Summary:
        """Seconds per block."""
        return self._summary(lambda x: float(x) / self.repeat)

    @cached_property
    def rate(self) -> Summary:
        """Blocks per second, summarized over per-sample rates."""
        return self._summary(lambda x: self.repeat / float(x))

    @cached_property
    def spread(self) -> Spread | None:
        """How the rates' noise splits between and within processes; None for one process."""
        return Spread.of([[self.repeat / float(x) for x in p.samples] for p in self.per_process])

    def _summary(self, convert: Callable[[float], float]) -> Summary:
        pooled = summarize([convert(x) for x in self.samples])
        if self.processes < 2:
            return pooled
        medians = [summarize([convert(x) for x in p.samples]).median for p in self.per_process]
        across = log_interval(medians)
        assert across is not None  # two processes or more
        return replace(
            pooled,
            median=across.center,
            ci_low=across.low,
            ci_high=across.high,
            processes=self.processes,
        )
