import numpy as np
import pytest

from accelbench.core.stats import Measurement, median_ci, summarize


def test_median_ci_matches_the_published_order_statistic_ranks():
    # For n = 100 the distribution-free 95% interval of the median runs from the 40th to the
    # 61st smallest value (standard tables, e.g. Conover, Practical Nonparametric Statistics).
    values = np.arange(1.0, 101.0)
    assert median_ci(values) == (40.0, 61.0)


def test_median_ci_needs_six_samples():
    assert median_ci(np.array([1.0, 2.0, 3.0, 4.0, 5.0])) is None
    # with six, only the extremes give 95% (coverage 1 - 2/64 = 96.9%)
    assert median_ci(np.array([6.0, 1.0, 5.0, 2.0, 4.0, 3.0])) == (1.0, 6.0)


def test_median_ci_coverage_is_at_least_95_percent_by_simulation():
    rng = np.random.default_rng(1)
    hits = 0
    trials = 2000
    for _ in range(trials):
        sample = rng.exponential(size=20)  # skewed, like timings; true median is ln 2
        low, high = median_ci(sample)
        hits += low <= np.log(2) <= high
    assert hits / trials >= 0.94


def test_summarize_known_values():
    s = summarize(np.array([1.0, 2.0, 3.0, 4.0, 10.0]))
    assert s.n == 5
    assert s.median == 3.0
    assert s.mean == 4.0
    assert s.iqr == pytest.approx(4.0 - 2.0)
    assert s.p10 == pytest.approx(1.4)
    assert s.p90 == pytest.approx(7.6)
    assert s.ci_low is None and s.ci_half_width_fraction is None


def test_rate_is_summarized_over_per_block_rates():
    m = Measurement(samples=(0.5, 0.25, 1.0, 0.5, 0.5, 0.25, 1.0))
    assert m.time.median == 0.5
    assert m.rate.median == 2.0
    assert m.rate.ci_low == pytest.approx(1.0) and m.rate.ci_high == pytest.approx(4.0)


def test_summarize_refuses_no_samples():
    with pytest.raises(ValueError):
        summarize(np.array([]))
