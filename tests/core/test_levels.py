"""Two-level statistics (core/levels, core/stats): intervals that hold across processes.

The simulations draw each process's offset from a known between-process spread and its samples
from a known within-process spread, as the H200 showed them (processes 10-40% apart, samples a
few percent). An interval over processes must cover the true median at least 90% of the time;
an interval over one process's samples, the old way, must be shown to fail.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from accelbench.analysis.compare import speedup
from accelbench.analysis.facts import Rounds
from accelbench.core.levels import RoundPolicy, Spread, log_interval, t_quantile
from accelbench.core.result import Result, RunSpec
from accelbench.core.stats import Measurement
from accelbench.errors import UsageError

TRUE_RATE = 100.0  # its per second: the median of the population of processes
SPEC = RunSpec("mlp", "cpu", 8, 1)


def _process(rng: np.random.Generator, between: float, within: float, n: int) -> list[float]:
    """One process's samples (seconds per it) around a center of its own."""
    center = TRUE_RATE * math.exp(between * rng.standard_normal())
    return [1.0 / (center * math.exp(within * z)) for z in rng.standard_normal(n)]


def _measured(processes: list[list[float]]) -> Measurement:
    samples = tuple(s for p in processes for s in p)
    return Measurement(samples, (), 1, tuple((len(p), 0) for p in processes))


def _sweeps(between: float, within: float, count: int = 400, processes: int = 3, n: int = 10):
    rng = np.random.default_rng(7)
    for _ in range(count):
        yield [_process(rng, between, within, n) for _ in range(processes)]


def _covers(m: Measurement) -> bool:
    rate = m.rate
    return rate.ci_low is not None and rate.ci_low <= TRUE_RATE <= rate.ci_high


@pytest.mark.parametrize(
    ("between", "within"), [(0.05, 0.01), (0.15, 0.02), (0.001, 0.02), (0.02, 0.02)]
)
def test_the_interval_over_processes_covers_the_true_median(between, within):
    sweeps = list(_sweeps(between, within))
    coverage = np.mean([_covers(_measured(s)) for s in sweeps])
    assert coverage >= 0.90, coverage


def test_an_interval_over_one_process_fails_where_processes_differ():
    # what every earlier accelbench printed: the first process's samples alone, or all the
    # processes' samples pooled as if one
    sweeps = list(_sweeps(between=0.05, within=0.01))
    alone = np.mean([_covers(Measurement(tuple(s[0]))) for s in sweeps])
    pooled = np.mean([_covers(Measurement(tuple(x for p in s for x in p))) for s in sweeps])
    assert alone < 0.5 and pooled < 0.7, (alone, pooled)
    assert np.mean([_covers(_measured(s)) for s in sweeps]) >= 0.90


def _result(processes: list[list[float]], sweep: str = "", passes=()) -> Result:
    rounds = Rounds(passes=tuple(passes) or tuple(range(1, len(processes) + 1)))
    return Result(
        spec=SPEC,
        status="ok",
        measurement=_measured(processes),
        sweep=sweep,
        metrics=rounds.to_metrics(),
    )


def test_an_a_a_comparison_across_sweeps_is_significant_at_most_5_percent_of_the_time():
    rng = np.random.default_rng(11)
    trials, significant, one_process = 300, 0, 0
    for _ in range(trials):
        a = [_process(rng, 0.05, 0.01, 10) for _ in range(3)]
        b = [_process(rng, 0.05, 0.01, 10) for _ in range(3)]
        significant += speedup(_result(a, "one"), _result(b, "two")).significant
        one_process += _one_process_says_different(a[0], b[0])
    assert significant / trials <= 0.05
    assert one_process / trials > 0.5  # the one-process way calls most A/A pairs different


def test_an_a_a_comparison_in_one_sweep_pairs_processes_and_cancels_the_drift():
    # Student's t over the pairs is exact: 5% of A/A pairs significant is its nominal rate,
    # so the simulation's own noise (two standard errors of a share of 5%) is allowed.
    rng = np.random.default_rng(12)
    trials, significant = 1000, 0
    widths_paired, widths_unpaired = [], []
    for _ in range(trials):
        # the host drifts from pass to pass (the same for both), and each process adds its own
        drift = [math.exp(0.10 * z) for z in rng.standard_normal(3)]
        a = [[x / d for x in _process(rng, 0.01, 0.01, 10)] for d in drift]
        b = [[x / d for x in _process(rng, 0.01, 0.01, 10)] for d in drift]
        paired = speedup(_result(a, "same"), _result(b, "same"))
        unpaired = speedup(_result(a, "one"), _result(b, "two"))
        assert paired.method.startswith("paired") and unpaired.method.startswith("unpaired")
        significant += paired.significant
        widths_paired.append(paired.high / paired.low)
        widths_unpaired.append(unpaired.high / unpaired.low)
    assert significant / trials <= 0.05 + 2 * math.sqrt(0.05 * 0.95 / trials)
    assert np.median(widths_paired) < np.median(widths_unpaired)


def _one_process_says_different(a: list[float], b: list[float]) -> bool:
    """The earlier accelbench's call: the two processes' median intervals do not overlap."""
    ra, rb = Measurement(tuple(a)).rate, Measurement(tuple(b)).rate
    return ra.ci_high < rb.ci_low or rb.ci_high < ra.ci_low


def test_a_real_difference_is_found():
    rng = np.random.default_rng(13)
    a = [[x / 1.3 for x in _process(rng, 0.02, 0.01, 10)] for _ in range(3)]  # 1.3x faster
    b = [_process(rng, 0.02, 0.01, 10) for _ in range(3)]
    found = speedup(_result(a, "one"), _result(b, "two"))
    assert found.significant and found.low > 1.1 and found.ratio == pytest.approx(1.3, rel=0.1)


def test_too_few_processes_or_samples_give_no_interval_and_say_what_is_missing():
    rng = np.random.default_rng(14)
    one = _result([_process(rng, 0.0, 0.01, 10)])
    three = _result([_process(rng, 0.0, 0.01, 10) for _ in range(3)])
    found = speedup(one, three)
    assert not found.significant and found.no_interval.startswith("the candidate ran in 1")
    assert "needs 2 on each side" in found.no_interval
    short = _result([_process(rng, 0.0, 0.01, 1) for _ in range(2)])  # 2 samples in all
    assert "2 timed samples: too few (needs 6)" in speedup(three, short).no_interval


def test_t_quantiles_match_scipy():
    for df in (1, 2, 3, 7, 30, 31, 45.5):
        assert t_quantile(df) == pytest.approx(stats.t.ppf(0.975, df), abs=1e-4)
    with pytest.raises(ValueError):
        t_quantile(0)


def test_log_interval_is_student_t_over_the_logs():
    found = log_interval([90.0, 100.0, 110.0])
    logs = np.log([90.0, 100.0, 110.0])
    half = stats.t.ppf(0.975, 2) * logs.std(ddof=1) / math.sqrt(3)
    assert found.center == pytest.approx(math.exp(logs.mean()))
    assert found.low == pytest.approx(math.exp(logs.mean() - half), rel=1e-4)
    assert log_interval([100.0]) is None


def test_a_measurement_splits_its_samples_by_process_and_checks_the_split():
    m = Measurement((1.0, 1.0, 2.0, 2.0, 2.0), (5.0, 6.0), 1, ((2, 1), (3, 1)))
    first, second = m.per_process
    assert first.samples == (1.0, 1.0) and first.warmup == (5.0,)
    assert second.samples == (2.0, 2.0, 2.0) and second.warmup == (6.0,)
    assert m.processes == 2 and m.rate.processes == 2
    assert m.rate.median == pytest.approx(math.sqrt(1.0 * 0.5))  # geometric mean of medians
    assert m.rate.n == 5 and m.time.median == pytest.approx(1 / m.rate.median)
    with pytest.raises(ValueError, match="do not split"):
        Measurement((1.0, 2.0), (), 1, ((1, 0), (2, 0)))
    grown = Measurement((1.0,), (3.0,)).with_process(Measurement((2.0, 2.0), (4.0,)))
    assert grown.rounds == ((1, 1), (2, 1)) and grown.warmup == (3.0, 4.0)


def test_the_spread_says_which_level_dominates():
    rng = np.random.default_rng(15)
    apart = Spread.of([[1 / x for x in _process(rng, 0.10, 0.005, 20)] for _ in range(4)])
    assert apart.dominant == "between processes" and apart.between > 0.03
    together = Spread.of([[1 / x for x in _process(rng, 0.0, 0.05, 20)] for _ in range(4)])
    assert together.dominant == "within a process" and together.within > 0.03
    assert Spread.of([[1.0, 2.0]]) is None


def test_a_policy_refuses_counts_below_one_and_a_cap_below_an_interval():
    with pytest.raises(UsageError, match="--rounds must be 1 or more"):
        RoundPolicy(fixed=0)
    with pytest.raises(UsageError, match="below the 2 an interval needs"):
        RoundPolicy(most=1)
    assert RoundPolicy(fixed=1).text() == "1 fixed" and RoundPolicy().text() == "adaptive, 3 to 8"


def test_a_round_policy_refuses_a_negative_or_endless_gap():
    import math

    import pytest

    from accelbench.core.levels import RoundPolicy
    from accelbench.errors import UsageError

    assert RoundPolicy(min_gap=30.0).min_gap == 30.0
    for bad in (-1.0, math.inf, math.nan):
        with pytest.raises(UsageError, match="--min-gap must be 0 or more seconds"):
            RoundPolicy(min_gap=bad)
