"""Statistics over raw timing samples.

A `Measurement` keeps every timed block's duration; everything else (median, spread, confidence
interval, noise warnings) is derived from them, so a stored result can always be re-analysed.

The 95% confidence interval of the median is the distribution-free order-statistic interval:
for n sorted samples it is [x(k), x(n-k+1)] with the largest k whose binomial coverage is still
at least 95%. It needs no assumption about the shape of the timing distribution (which is
skewed: interruptions only ever make a block slower), and it does not exist below 6 samples,
which we say rather than invent one.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy loads when statistics are computed: `accelbench --help` needs none
    import numpy as np

__all__ = ["Measurement", "Summary", "median_ci", "summarize", "NOISY_CI_FRACTION"]

CONFIDENCE = 0.95
# Above this CI half-width, relative to the median, a run is flagged as noisy.
NOISY_CI_FRACTION = 0.05


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
        }


def median_ci(values: np.ndarray, confidence: float = CONFIDENCE) -> tuple[float, float] | None:
    """Distribution-free confidence interval of the median, or None with too few values."""
    import numpy as np
    from scipy.stats import binom

    n = len(values)
    alpha = (1 - confidence) / 2
    # The interval runs from the (k+1)-th smallest to the (k+1)-th largest value (k 0-based);
    # it misses the median on one side with probability P(Binomial(n, 1/2) <= k), which must
    # stay within alpha. Take the largest such k: the narrowest interval with the coverage.
    k = int(binom.ppf(alpha, n, 0.5))
    if binom.cdf(k, n, 0.5) > alpha:
        k -= 1
    if k < 0:
        return None
    ordered = np.sort(values)
    return float(ordered[k]), float(ordered[n - 1 - k])


def summarize(values: np.ndarray) -> Summary:
    import numpy as np

    if len(values) == 0:
        raise ValueError("no samples to summarize")
    q10, q25, q50, q75, q90 = np.percentile(values, [10, 25, 50, 75, 90])
    ci = median_ci(values)
    return Summary(
        n=len(values),
        median=float(q50),
        mean=float(np.mean(values)),
        iqr=float(q75 - q25),
        p10=float(q10),
        p90=float(q90),
        ci_low=ci[0] if ci else None,
        ci_high=ci[1] if ci else None,
    )


@dataclass(frozen=True)
class Measurement:
    """Raw durations of the timed samples (seconds), plus the warm-up blocks kept aside.

    Each timed sample is `repeat` blocks run back to back (1 unless the stop rule grouped short
    blocks so that synchronizing at every boundary costs nothing measurable); statistics are
    per block.
    """

    samples: tuple[float, ...]
    warmup: tuple[float, ...] = ()
    repeat: int = 1

    @cached_property
    def time(self) -> Summary:
        """Seconds per block."""
        import numpy as np

        return summarize(np.asarray(self.samples, dtype=float) / self.repeat)

    @cached_property
    def rate(self) -> Summary:
        """Blocks per second, summarized over per-sample rates."""
        import numpy as np

        return summarize(self.repeat / np.asarray(self.samples, dtype=float))

    @property
    def warnings(self) -> list[str]:
        """What a careful reader should know before trusting the numbers."""
        notes = []
        fraction = self.time.ci_half_width_fraction
        if fraction is None:
            notes.append(
                f"only {len(self.samples)} timed samples: a 95% CI of the median needs 6 or more"
            )
        elif fraction > NOISY_CI_FRACTION:
            notes.append(
                f"noisy: the 95% CI is ±{fraction:.1%} of the median "
                f"(over {NOISY_CI_FRACTION:.0%}); run more epochs or quiet the machine"
            )
        return notes
