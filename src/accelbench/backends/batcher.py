"""The dynamic batcher: in the process that runs the model, LoadGen's queries (from
`backends/loadgen`'s process, over a pipe) are gathered into batches and answered.

A batch closes when it holds `max_batch` queries or when its oldest query has waited `wait_s`;
queries that arrived meanwhile are taken without waiting. A batch is launched, not run to its
end: while the device works on it, the arrivals are read from the pipe (each stamped as it is
read, so its wait counts from then) and the device is asked whether the batch has finished;
then the device is synchronized, the answers are sent, and the next batch is formed from what
was read meanwhile. So the device does not sit idle while a batch's worth of messages is read
one by one, and an answer is never sent before its result exists. This thread is the only one
here: no callback competes with the kernels' launches for the GIL.

One batch is in flight at a time. A second, launched before the first finishes, would hide only
the host's time between a batch's end and the next one's launch (sending the answers, forming
and launching the batch: 0.13-0.2 ms on a 2-core VM, 5-7% of a 2.6 ms batch; BENCHMARKS.md,
"the batcher reads the pipe while the device works"), and it would close each batch earlier,
smaller, when near saturation the larger batch is the cheaper per query.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Generic, TypeVar

from .arrivals import Arrivals, readable

__all__ = ["BatchWork", "Batcher"]

# Give the core to another runnable thread or process, if there is one (POSIX; elsewhere a
# zero sleep)
_yield_core = getattr(os, "sched_yield", lambda: time.sleep(0))

Handle = TypeVar("Handle")


@dataclass(frozen=True)
class BatchWork(Generic[Handle]):
    """A batch of n samples on the device, in three steps: `launch(n)` queues it and returns
    at once where the device works on its own (a handle to ask about); `done(handle)` says,
    without waiting, whether it has finished; `finish(handle)` waits until it has (it
    synchronizes). On a device whose launch is the whole run (the CPU), done is True at once."""

    launch: Callable[[int], Handle]
    done: Callable[[Handle], bool]
    finish: Callable[[Handle], None]

    def run(self, size: int) -> None:
        """One batch of `size` from launch to finish: the warm-up's and the timings' call."""
        self.finish(self.launch(size))

    @staticmethod
    def synchronous(run_batch: Callable[[int], None]) -> BatchWork[None]:
        """Work whose launch runs the batch to its end (`run_batch(n)` synchronizes)."""
        return BatchWork(run_batch, lambda _: True, lambda _: None)


@dataclass(frozen=True)
class Batcher:
    max_batch: int
    wait_s: float

    def serve(
        self, requests: Connection, responses: Connection, work: BatchWork[Handle]
    ) -> Counter[int]:
        """Answer one LoadGen test's queries until it says it is done; how many batches of
        each size were formed. Every query it issued has been answered by then (LoadGen's test
        ends only when all are)."""
        queued = Arrivals()
        formed: Counter[int] = Counter()
        while answered := queued.next_batch(requests, self.max_batch, self.wait_s):
            size = len(answered)
            handle = work.launch(size)
            self._read_while_running(queued, requests, work, handle)
            work.finish(handle)  # the results exist on the device before they are answered
            responses.send(("answered", answered))
            formed[size] += 1
        return formed

    @staticmethod
    def _read_while_running(
        queued: Arrivals, requests: Connection, work: BatchWork[Handle], handle: Handle
    ) -> None:
        """Until the device has finished the batch, take the arrivals as they come. It asks
        without blocking on either (a blocking wait on the pipe would notice the batch's end
        late; one on the device would leave the pipe unread), and between two questions it
        yields the core: on a host with a core to spare that costs nothing, on a busy one the
        LoadGen process gets to issue its queries on time."""
        while not work.done(handle):
            if queued.done:
                return  # nothing more will arrive: finish() waits for the device
            if readable(requests, 0.0):
                queued.take(requests)
            else:
                _yield_core()
