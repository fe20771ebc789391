"""Server's search, shared by a classifier's serving (backends/serving) and a language
model's (backends/serving_lm): the highest target QPS whose LoadGen run is VALID, by bisection
between 0 and Offline's rate, in at most `steps` runs that each end within the search's budget.

A Server run lasts its minimum duration or its minimum queries' arrivals, whichever is longer,
so a low target costs the most: where the bisection's next target would not end within what is
left of the budget, the lowest target that does is run instead (a slow language model's first
midpoint needed 189 s of a 150 s budget; the search then stopped with no figure at all)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from .loadgen import LoadResult

__all__ = ["RunLimits", "ServerSearch", "bisect", "lowest_fitting", "not_found", "offline"]

OFFLINE_REPEATS = 2  # an Offline run that ended too soon is repeated at most this often


class _Run(Protocol):
    @property
    def result(self) -> LoadResult: ...


R = TypeVar("R", bound=_Run)


@dataclass(frozen=True)
class ServerSearch(Generic[R]):
    """Server's search: every run tried, the best VALID one, and what bounds the answer."""

    tried: tuple[R, ...]
    best: R | None  # the highest target LoadGen judged VALID
    failed_above: float | None  # the lowest target that failed (None: none did)
    elapsed_s: float
    why_none: str = ""  # when best is None: why no target met the bound

    @property
    def qps(self) -> float | None:
        return self.best.result.target_qps if self.best else None

    def to_offline(self, offline: R | None) -> float | None:
        """The QPS found over `offline`'s throughput, on the same settings; None without one."""
        if self.qps is None or offline is None or offline.result.qps <= 0:
            return None
        return self.qps / offline.result.qps


@dataclass(frozen=True)
class RunLimits:
    """How long each Server run lasts at least, and what the search may spend."""

    duration_s: float  # each run's minimum duration
    min_queries: int  # each run's minimum query count
    steps: int  # bisection runs at most
    budget_s: float  # no run starts that would end past this


def lowest_fitting(limits: RunLimits, left_s: float) -> float | None:
    """The lowest target whose run ends within `left_s` seconds; None where none does."""
    if left_s < limits.duration_s or left_s <= 0:
        return None
    return limits.min_queries / left_s


def bisect(
    run_at: Callable[[float], R],
    ceiling: float,
    limits: RunLimits,
    started: float,
    clock: Callable[[], float] = time.monotonic,
) -> ServerSearch[R]:
    """Bisection over the target between 0 and `ceiling` (Offline's rate), each target run by
    `run_at`, the budget counted on `clock` from `started`; `why_none` is left for the caller,
    who knows its bounds' words (`not_found`)."""
    low, high = 0.0, ceiling
    tried: list[R] = []
    best: R | None = None
    failed: float | None = None
    for _ in range(limits.steps):
        floor = lowest_fitting(limits, limits.budget_s - (clock() - started))
        if floor is None or floor >= high or not math.isfinite(floor):
            break
        target = max((low + high) / 2, floor)
        run = run_at(target)
        tried.append(run)
        if run.result.valid:
            low, best = target, run
        else:
            high, failed = target, target
    return ServerSearch(tuple(tried), best, failed, clock() - started)


def not_found(search: ServerSearch[R], limits: RunLimits, ceiling: float, bounds: str) -> str:
    """Why the search found no figure, in one line (`bounds`: "the bound", "the bounds")."""
    if search.best is not None:
        return ""
    if not search.tried:
        need = limits.min_queries / ceiling if ceiling > 0 else math.inf
        return (
            f"no Server run fits the search's {limits.budget_s:g} s budget (a run needs its "
            f"{limits.min_queries} queries: {need:.3g} s even at Offline's {ceiling:.4g} QPS)"
        )
    lowest = min(run.result.target_qps for run in search.tried)
    why = f"no target met {bounds}, down to {lowest:.4g} QPS"
    if len(search.tried) < limits.steps:  # the bisection stopped: no lower run would fit
        why += f"; a lower target's run would not end within the {limits.budget_s:g} s budget"
    return why


def offline(run_at: Callable[[float], R], expected_qps: float) -> R:
    """Offline at `expected_qps`: LoadGen issues rate x minimum duration samples at once, so a
    run served faster than expected ends before its minimum duration and is INVALID. It is
    repeated at twice the rate it reached, at most OFFLINE_REPEATS times (a tiny model's warm
    batch guesses its rate low: on the 2-core VM a run at 1.5 times the first's rate still
    ended too soon)."""
    target, run = expected_qps, run_at(expected_qps)
    for _ in range(OFFLINE_REPEATS):
        if "minimum duration" not in run.result.failed or run.result.qps <= target:
            break
        target = 2 * run.result.qps
        run = run_at(target)
    return run
