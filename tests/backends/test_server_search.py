"""backends/server_search: Server's bisection within its budget, on a fake clock that a run
advances by its length (its minimum duration or its minimum queries' arrivals)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from accelbench.backends.loadgen import LoadResult
from accelbench.backends.server_search import (
    RunLimits,
    bisect,
    lowest_fitting,
    not_found,
    offline,
)


@dataclass(frozen=True)
class _Run:
    result: LoadResult


class _Served:
    """A system that meets the bound up to `capacity` QPS; each run takes its length."""

    def __init__(self, capacity: float, limits: RunLimits) -> None:
        self.capacity, self.limits, self.now, self.targets = capacity, limits, 0.0, []

    def clock(self) -> float:
        return self.now

    def run_at(self, target: float) -> _Run:
        self.targets.append(target)
        self.now += max(self.limits.duration_s, self.limits.min_queries / target)
        valid = target <= self.capacity
        result = LoadResult(
            scenario="server", target_qps=target, valid=valid,
            failed=() if valid else ("performance constraints (latency)",), qps=target,
            latency_s={}, queries=0, samples=0, late=0, errors=0, summary="",
        )  # fmt: skip
        return _Run(result)

    def search(self, ceiling: float):
        found = bisect(self.run_at, ceiling, self.limits, 0.0, self.clock)
        return found, not_found(found, self.limits, ceiling, "the bounds")


SLOW = RunLimits(duration_s=2.0, min_queries=500, steps=6, budget_s=150.0)


def test_a_slow_models_first_run_is_the_lowest_target_that_fits_not_none():
    """llama-1b on the H200 served 5.3 prompts/s Offline: the midpoint's 500 queries needed
    189 s of the 150 s budget, and the search used to stop with no figure."""
    served = _Served(capacity=4.0, limits=SLOW)
    found, why = served.search(ceiling=5.3)
    assert served.targets == [pytest.approx(500 / 150)]  # then no budget is left
    assert found.qps == pytest.approx(500 / 150) and why == ""


def test_a_fast_system_is_bisected_as_before():
    limits = RunLimits(duration_s=2.0, min_queries=1024, steps=6, budget_s=150.0)
    served = _Served(capacity=12_000.0, limits=limits)
    found, _ = served.search(ceiling=12_800.0)
    assert served.targets == [6_400.0, 9_600.0, 11_200.0, 12_000.0, 12_400.0, 12_200.0]
    assert found.qps == 12_000.0 and found.failed_above == 12_200.0


def test_no_run_that_fits_is_said_with_what_a_run_needs():
    served = _Served(capacity=1.0, limits=SLOW)
    found, why = served.search(ceiling=2.0)
    assert served.targets == [] and found.best is None
    assert why == (
        "no Server run fits the search's 150 s budget (a run needs its 500 queries: 250 s "
        "even at Offline's 2 QPS)"
    )


def test_every_target_failing_down_to_the_budgets_floor_says_so():
    limits = RunLimits(duration_s=2.0, min_queries=500, steps=6, budget_s=400.0)
    served = _Served(capacity=0.5, limits=limits)
    found, why = served.search(ceiling=5.0)
    assert found.best is None and len(served.targets) < limits.steps
    assert why.startswith(f"no target met the bounds, down to {min(served.targets):.4g} QPS")
    assert why.endswith("a lower target's run would not end within the 400 s budget")


def test_the_lowest_fitting_target():
    assert lowest_fitting(SLOW, 100.0) == 5.0
    assert lowest_fitting(SLOW, 1.0) is None  # shorter than a run's minimum duration


def _offline_run(target: float, reached: float) -> _Run:
    """An Offline run at `target` that served `reached` per second: too soon when faster."""
    early = reached > target
    result = LoadResult(
        scenario="offline", target_qps=target, valid=not early,
        failed=("minimum duration",) if early else (), qps=reached, latency_s={}, queries=1,
        samples=0, late=0, errors=0, summary="",
    )  # fmt: skip
    return _Run(result)


def test_an_offline_run_that_ended_too_soon_is_repeated_at_twice_the_rate_it_reached():
    """The 2-core VM's MLP reached 86,467/s at a 50,000 guess, then 151,001/s at 1.5 times
    that (129,700): still too soon. A second repeat is what the rule allows now."""
    reached = {50_000.0: 86_467.0, 172_934.0: 180_000.0, 360_000.0: 150_000.0}
    targets: list[float] = []

    def run_at(target: float) -> _Run:
        targets.append(target)
        return _offline_run(target, reached[target])

    run = offline(run_at, 50_000.0)
    assert targets == [50_000.0, 172_934.0, 360_000.0] and run.result.valid


def test_an_offline_run_is_repeated_at_most_twice_and_a_valid_one_never():
    targets: list[float] = []

    def always_early(target: float) -> _Run:
        targets.append(target)
        return _offline_run(target, 10 * target)

    assert not offline(always_early, 1.0).result.valid and targets == [1.0, 20.0, 400.0]
    assert offline(lambda target: _offline_run(target, target / 2), 8.0).result.valid


def _offline_at(qps: float) -> _Run:
    result = LoadResult(
        scenario="offline", target_qps=qps, valid=True, failed=(), qps=qps, latency_s={},
        queries=1, samples=0, late=0, errors=0, summary="",
    )  # fmt: skip
    return _Run(result)


def test_the_ratio_to_offline_needs_a_figure_and_an_offline_rate():
    limits = RunLimits(duration_s=2.0, min_queries=1024, steps=6, budget_s=150.0)
    found, _ = _Served(capacity=12_000.0, limits=limits).search(ceiling=12_800.0)
    assert found.to_offline(_offline_at(16_000.0)) == pytest.approx(12_000.0 / 16_000.0)
    assert found.to_offline(_offline_at(0.0)) is None  # Offline served nothing
    assert found.to_offline(None) is None
    none, _ = _Served(capacity=0.0, limits=limits).search(ceiling=12_800.0)
    assert none.qps is None and none.to_offline(_offline_at(16_000.0)) is None
