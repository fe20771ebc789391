"""The dynamic batcher's settings chosen from the latency bound (`--max-batches auto`,
`--batch-waits auto`), by timing the model in the worker before LoadGen starts.

The rule: the wait is a twentieth of the bound; the largest batch is the largest candidate whose
warm median service time is at most (bound - wait) / 2.5. Why 2.5: at a rate near the most the
device can serve, a query that arrives as a full batch starts waits for that batch, then for its
own (two service times), after at most the wait for its batch to close; the half service time
more is room for Poisson bursts at p99. It is a rule of thumb checked against measurements, not
an optimum: on an H200 (resnet50 bf16 channels_last, CUDA graphs, 10 ms bound; BENCHMARKS.md,
issue 35 part 2) the best of the 12 settings measured was batches of 48 with a 0.5 ms wait
(0.83 of Offline), which is what the rule gives there; batches of 64 with a 2 ms wait reached
0.55. Candidates grow by powers of two and 1.5x steps between them, so the chosen batch is never
less than two thirds of the largest that fits.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

__all__ = [
    "CANDIDATES",
    "HEADROOM",
    "WAIT_SHARE",
    "BatchChoice",
    "auto_wait_s",
    "choose_max_batch",
    "median_s",
    "service_budget_s",
]

CANDIDATES = (1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128)
WAIT_SHARE = 20  # the auto wait is the bound over this
HEADROOM = 2.5  # a batch's service time is at most (bound - wait) over this


@dataclass(frozen=True)
class BatchChoice:
    """The largest batch chosen, and the evidence: each candidate timed, in order, until one
    took longer than the budget (that one included)."""

    max_batch: int
    budget_s: float
    timed: tuple[tuple[int, float], ...]  # (batch size, warm median seconds)


def auto_wait_s(bound_s: float) -> float:
    return bound_s / WAIT_SHARE


def service_budget_s(bound_s: float, wait_s: float) -> float:
    """The longest a batch may take to serve: (bound - wait) / 2.5 (can be below 0)."""
    return (bound_s - wait_s) / HEADROOM


def choose_max_batch(
    run_batch: Callable[[int], None],
    budget_s: float,
    candidates: tuple[int, ...] = CANDIDATES,
    timer: Callable[[Callable[[int], None], int], float] | None = None,
) -> BatchChoice:
    """Time the candidates from the smallest up (each run twice first: compiled, autotuned or
    captured on its first call) and stop at the first over `budget_s`; the largest within it,
    or the smallest where none is (the SingleStream run then says whether one query fits).
    `timer(run_batch, size)`: a warm batch's seconds (default: the median of 5 calls)."""
    timed: list[tuple[int, float]] = []
    chosen = candidates[0]
    for size in candidates:
        run_batch(size)
        run_batch(size)
        took = (timer or median_s)(run_batch, size)
        timed.append((size, took))
        if took > budget_s:
            break
        chosen = size
    return BatchChoice(chosen, budget_s, tuple(timed))


def median_s(run_batch: Callable[[int], None], size: int, times: int = 5) -> float:
    """The median of `times` calls of `run_batch(size)`, in seconds (it synchronizes)."""
    took = []
    for _ in range(times):
        begun = time.perf_counter()
        run_batch(size)
        took.append(time.perf_counter() - begun)
    return sorted(took)[times // 2]
