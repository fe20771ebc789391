"""How two classifiers' accuracies on the same images differ: a paired 95% interval.

Two runs tested on the same held-out images are paired: an image both get right (or both wrong)
says nothing about which is better; only the discordant images (right on one run, wrong on the
other) do. Comparing the two accuracies as if they came from different images would ignore that
and make the interval too wide or too narrow, depending on how much the runs agree.

The interval for the difference (candidate minus reference) is Newcombe's hybrid score interval
for paired proportions (Newcombe 1998, "Improved confidence intervals for the difference between
binomial proportions based on paired data", method 10; recommended by Fagerland, Lydersen and
Laake 2013): each accuracy's Wilson interval, combined with the correlation of the pairs. Unlike
the Wald interval it exists for every table (zero discordant images included), stays inside
[-1, 1], and does not collapse to a point.

The judgement against a tolerance is one-sided: a better run is never worse. A run is "within"
tolerance when the interval's lower end is above minus the tolerance (the data rule out a drop
of that size), "worse" when the interval lies below zero (a significant drop) and the estimate
is beyond the tolerance, and "undetermined" otherwise: the images are too few to tell a drop of
the tolerance's size from chance.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

__all__ = ["UNDETERMINED", "WITHIN", "WORSE", "PairedAccuracy", "paired_accuracy", "wilson"]

CONFIDENCE = 0.95
_Z = NormalDist().inv_cdf(0.5 + CONFIDENCE / 2)

WITHIN, WORSE, UNDETERMINED = "within", "worse", "undetermined"


def wilson(successes: int, n: int) -> tuple[float, float]:
    """The Wilson score interval of a proportion (95%)."""
    p, z2 = successes / n, _Z * _Z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = _Z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass(frozen=True)
class PairedAccuracy:
    """Two runs' correctness on the same n images, as the 2x2 table's cells."""

    both: int  # right on both runs
    reference_only: int  # right on the reference only: the candidate lost them
    candidate_only: int  # right on the candidate only
    neither: int

    @property
    def images(self) -> int:
        return self.both + self.reference_only + self.candidate_only + self.neither

    @property
    def difference(self) -> float:
        """Candidate's accuracy minus the reference's, a share."""
        return (self.candidate_only - self.reference_only) / self.images

    def interval(self) -> tuple[float, float]:
        """Newcombe's hybrid score 95% interval for `difference`."""
        n = self.images
        right_candidate = self.both + self.candidate_only
        right_reference = self.both + self.reference_only
        p1, p2 = right_candidate / n, right_reference / n
        l1, u1 = wilson(right_candidate, n)
        l2, u2 = wilson(right_reference, n)
        phi = self._correlation()
        low_sq = (p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2
        high_sq = (u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2
        delta = p1 - p2
        return delta - math.sqrt(max(low_sq, 0.0)), delta + math.sqrt(max(high_sq, 0.0))

    def _correlation(self) -> float:
        """phi, the correlation of the two runs' correctness; 0 where a margin is empty."""
        a, b, c, d = self.both, self.candidate_only, self.reference_only, self.neither
        margins = (a + b) * (c + d) * (a + c) * (b + d)
        return 0.0 if margins == 0 else (a * d - b * c) / math.sqrt(margins)

    def judge(self, tolerance: float) -> str:
        """WITHIN, WORSE or UNDETERMINED against a tolerance (a share, one-sided)."""
        low, high = self.interval()
        if low >= -tolerance:
            return WITHIN
        if high < 0 and self.difference < -tolerance:
            return WORSE
        return UNDETERMINED

    def to_dict(self) -> dict[str, Any]:
        low, high = self.interval()
        return {
            "images": self.images,
            "reference_only": self.reference_only,
            "candidate_only": self.candidate_only,
            "ci95_low_points": 100 * low,
            "ci95_high_points": 100 * high,
        }


def paired_accuracy(candidate: str, reference: str) -> PairedAccuracy:
    """The 2x2 table of two strings of per-image correctness ("1" right, "0" wrong), image by
    image; ValueError when they are not of one length or empty."""
    if len(candidate) != len(reference) or not candidate:
        raise ValueError(
            f"per-image results of {len(candidate)} and {len(reference)} images cannot be paired"
        )
    pairs = list(zip(candidate, reference, strict=True))
    return PairedAccuracy(
        both=pairs.count(("1", "1")),
        reference_only=pairs.count(("0", "1")),
        candidate_only=pairs.count(("1", "0")),
        neither=pairs.count(("0", "0")),
    )
