"""The largest batch that fits: double until a batch does not fit, then bisect.

Seed 001 claims unified memory lets a Mac train larger batches; this measures it per device.
Each probe is a short run in its own worker process (an OOM can leave a device's allocator in a
poor state, and a CPU that runs out of memory may have its process killed), so "fits" means a
real warm-up and two timed blocks completed.

Where memory past a limit spills to swap instead of raising (MPS: `Device.swap_limit`, its
recommended_max_memory()), a batch also does not fit when its probe's peak memory passes that
limit, or when its time per sample is more than SWAP_SLOWDOWN times the largest fitting
batch's (a larger batch should cost no more per sample): both are read like an OOM.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from ..core.result import Result, RunSpec
from ..devices.kinds import mentions_out_of_memory
from .facts import (
    MAX_BATCH,
    MAX_BATCH_LIMIT_REACHED,
    MAX_BATCH_PROBES,
    MAX_BATCH_STOPPED_BY,
)
from .measure import StopRule

__all__ = ["MaxBatch", "PROBE_STOP", "find_max_batch", "out_of_memory"]

PROBE_STOP = StopRule(blocks=2, warmup=1)
LIMIT = 1 << 16  # stop doubling here: a search must end even where memory seems endless
SWAP_SLOWDOWN = 2.0  # a probe this much slower per sample than a smaller batch is swapping


def out_of_memory(result: Result) -> bool:
    """Whether a probe failed for want of memory (as opposed to another error)."""
    return result.status == "oom" or (
        result.status == "error" and mentions_out_of_memory(result.error)
    )


@dataclass(frozen=True)
class MaxBatch:
    """The search's outcome: the largest batch that ran, and every probe on the way."""

    largest: Result | None  # the run at the largest batch that fit, None if none did
    probes: tuple[tuple[int, str], ...]  # (batch size, status) in the order tried
    limit_reached: bool = False
    stopped_by: str = ""  # an error other than memory that ended the search, or a swap's bound

    def to_metrics(self) -> dict[str, object]:
        return {
            MAX_BATCH: self.largest.spec.batch_size if self.largest else 0,
            MAX_BATCH_PROBES: [list(p) for p in self.probes],
            MAX_BATCH_LIMIT_REACHED: self.limit_reached,
            MAX_BATCH_STOPPED_BY: self.stopped_by,
        }


def find_max_batch(
    spec: RunSpec, run: Callable[[RunSpec], Result], swap_limit: int | None = None
) -> MaxBatch:
    """Search from spec.batch_size: double while it fits (halve while it does not), then
    bisect between the largest batch that fit and the smallest that did not. With
    `swap_limit` (bytes), a probe past it or slowed down by swapping does not fit."""
    return _Search(spec, run, swap_limit).result()


def per_sample_s(result: Result) -> float | None:
    """A run's median step time divided by its batch, or None without a measurement."""
    if result.measurement is None:
        return None
    spec = result.spec
    return result.measurement.time.median / spec.steps_per_block / spec.batch_size


class _Search:
    def __init__(
        self, spec: RunSpec, run: Callable[[RunSpec], Result], swap_limit: int | None
    ) -> None:
        self.spec, self.run, self.swap_limit = spec, run, swap_limit
        self.swapped: dict[int, str] = {}  # batch -> why it counts as swapping
        self.probes: list[tuple[int, str]] = []
        self.good: Result | None = None  # the largest batch that fit so far
        self.bad: int | None = None  # the smallest batch that did not
        self.failure: Result | None = None  # an error that is not about memory

    def attempt(self, batch: int) -> bool | None:
        """True if `batch` fits, False if it runs out of memory, None on another error."""
        result = self.run(replace(self.spec, batch_size=batch))
        swapping = self._swapping(result) if result.status == "ok" else ""
        self.probes.append((batch, "swap" if swapping else result.status))
        if swapping:
            self.swapped[batch] = swapping
            self.bad = batch if self.bad is None else min(self.bad, batch)
            return False
        if result.status == "ok":
            if self.good is None or batch > self.good.spec.batch_size:
                self.good = result
            return True
        if out_of_memory(result):
            self.bad = batch if self.bad is None else min(self.bad, batch)
            return False
        self.failure = result
        return None

    def _swapping(self, result: Result) -> str:
        """Why a probe that ran counts as spilling to swap, or ""."""
        if self.swap_limit is None:
            return ""
        if result.peak_memory is not None and result.peak_memory > self.swap_limit:
            return (
                f"{result.peak_memory} B passed the device's {self.swap_limit} B "
                "recommended maximum (beyond it, memory spills to swap)"
            )
        now = per_sample_s(result)
        before = per_sample_s(self.good) if self.good is not None else None
        if now is None or before is None or now <= SWAP_SLOWDOWN * before:
            return ""
        assert self.good is not None
        return (
            f"a swap slowdown: {now / before:.1f}x the time per sample of batch "
            f"{self.good.spec.batch_size}"
        )

    def result(self) -> MaxBatch:
        batch = self.spec.batch_size
        fits = self.attempt(batch)
        while fits and batch * 2 <= LIMIT:  # it fits: double until it does not
            batch *= 2
            fits = self.attempt(batch)
        while fits is False and self.good is None and batch > 1:  # it never fit: halve
            batch //= 2
            fits = self.attempt(batch)
        if self.failure is None and self.good is not None and self.bad is not None:
            self._bisect()
        return self._outcome()

    def _bisect(self) -> None:
        assert self.good is not None and self.bad is not None
        while self.bad - self.good.spec.batch_size > 1:
            if self.attempt((self.good.spec.batch_size + self.bad) // 2) is None:
                return

    def _outcome(self) -> MaxBatch:
        stopped = f"{self.failure.status}: {self.failure.error}" if self.failure else ""
        if not stopped and self.bad in self.swapped:  # the bound is a swap's, not an OOM's
            stopped = f"batch {self.bad}: {self.swapped[self.bad]}"
        limit = self.bad is None and self.failure is None and self.good is not None
        return MaxBatch(self.good, tuple(self.probes), limit_reached=limit, stopped_by=stopped)
