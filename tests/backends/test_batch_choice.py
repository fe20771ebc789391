"""backends/batch_choice: the auto wait and largest batch, from the bound and the warm batches'
times (a timer injected, so the rule is tested apart from this host's speed)."""

from __future__ import annotations

import pytest

from accelbench.backends.batch_choice import (
    CANDIDATES,
    auto_wait_s,
    choose_max_batch,
    service_budget_s,
)


def _linear(per_sample_s: float, fixed_s: float = 0.0):
    """A timer whose batch of n takes fixed + n x per sample seconds, and the sizes it ran."""
    ran: list[int] = []

    def run_batch(size: int) -> None:
        ran.append(size)

    def timer(run, size: int) -> float:
        run(size)
        return fixed_s + size * per_sample_s

    return run_batch, timer, ran


def test_the_wait_is_a_twentieth_of_the_bound_and_the_budget_leaves_room_for_two_batches():
    assert auto_wait_s(0.010) == pytest.approx(0.0005)
    assert service_budget_s(0.010, 0.0005) == pytest.approx(0.0038)


def test_the_largest_candidate_within_the_budget_is_chosen_and_timing_stops_above_it():
    # an H200-like resnet50: 1 ms plus 0.056 ms a sample: 48 take 3.69 ms, 64 take 4.58 ms
    run_batch, timer, ran = _linear(0.056e-3, 1e-3)
    choice = choose_max_batch(run_batch, service_budget_s(0.010, 0.0005), timer=timer)
    assert choice.max_batch == 48
    assert [size for size, _ in choice.timed] == [1, 2, 4, 8, 16, 24, 32, 48, 64]
    assert 96 not in ran and 128 not in ran  # nothing past the first over the budget
    assert ran.count(48) == 3  # twice to warm it, once timed


def test_sizes_between_powers_of_two_are_candidates():
    assert {24, 48, 96} <= set(CANDIDATES)
    run_batch, timer, _ = _linear(1e-3)  # 1 ms a sample, a budget of 25 ms
    assert choose_max_batch(run_batch, 0.025, timer=timer).max_batch == 24


def test_every_candidate_within_the_budget_gives_the_largest():
    run_batch, timer, _ = _linear(1e-9)
    choice = choose_max_batch(run_batch, 1.0, timer=timer)
    assert choice.max_batch == max(CANDIDATES) and len(choice.timed) == len(CANDIDATES)


def test_none_within_the_budget_gives_a_batch_of_one_with_its_time_kept():
    run_batch, timer, _ = _linear(0.0, 0.020)  # 20 ms whatever the size
    choice = choose_max_batch(run_batch, service_budget_s(0.010, 0.0005), timer=timer)
    assert choice.max_batch == 1 and choice.timed == ((1, 0.020),)
