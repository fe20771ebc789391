"""The largest batch that fits: double until a batch does not fit, then bisect.

Seed 001 claims unified memory lets a Mac train larger batches; this measures it per device.
Each probe is a short run in its own worker process (an OOM can leave a device's allocator in a
poor state, and a CPU that runs out of memory may have its process killed), so "fits" means a
real warm-up and two timed blocks completed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from ..core import metrics as keys
from ..core.result import Result, RunSpec
from ..devices.kinds import mentions_out_of_memory
from .measure import StopRule

__all__ = ["MaxBatch", "PROBE_STOP", "find_max_batch", "out_of_memory"]

PROBE_STOP = StopRule(blocks=2, warmup=1)
LIMIT = 1 << 16  # stop doubling here: a search must end even where memory seems endless


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
    stopped_by: str = ""  # an error other than memory that ended the search

    def to_metrics(self) -> dict[str, object]:
        return {
            keys.MAX_BATCH: self.largest.spec.batch_size if self.largest else 0,
            keys.MAX_BATCH_PROBES: [list(p) for p in self.probes],
            keys.MAX_BATCH_LIMIT_REACHED: self.limit_reached,
            keys.MAX_BATCH_STOPPED_BY: self.stopped_by,
        }


def find_max_batch(spec: RunSpec, run: Callable[[RunSpec], Result]) -> MaxBatch:
    """Search from spec.batch_size: double while it fits (halve while it does not), then
    bisect between the largest batch that fit and the smallest that did not."""
    return _Search(spec, run).result()


class _Search:
    def __init__(self, spec: RunSpec, run: Callable[[RunSpec], Result]) -> None:
        self.spec, self.run = spec, run
        self.probes: list[tuple[int, str]] = []
        self.good: Result | None = None  # the largest batch that fit so far
        self.bad: int | None = None  # the smallest batch that did not
        self.failure: Result | None = None  # an error that is not about memory

    def attempt(self, batch: int) -> bool | None:
        """True if `batch` fits, False if it runs out of memory, None on another error."""
        result = self.run(replace(self.spec, batch_size=batch))
        self.probes.append((batch, result.status))
        if result.status == "ok":
            if self.good is None or batch > self.good.spec.batch_size:
                self.good = result
            return True
        if out_of_memory(result):
            self.bad = batch if self.bad is None else min(self.bad, batch)
            return False
        self.failure = result
        return None

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
        limit = self.bad is None and self.failure is None and self.good is not None
        return MaxBatch(self.good, tuple(self.probes), limit_reached=limit, stopped_by=stopped)
