"""The dynamic batcher: in the process that runs the model, LoadGen's queries (from
`backends/loadgen`'s process, over a pipe) are gathered into batches and answered.

A batch closes when it holds `max_batch` queries or when its oldest query has waited `wait_s`;
queries that arrived meanwhile are taken without waiting. `run_batch(n)` runs the model on n
samples and returns once the device has finished (it synchronizes), so an answer is never sent
before its result exists. This thread is the only one here: no callback competes with the
kernels' launches for the GIL.
"""

from __future__ import annotations

import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection

__all__ = ["Batcher"]


@dataclass
class _Queued:
    ids: deque[int] = field(default_factory=deque)
    arrived: deque[float] = field(default_factory=deque)  # time.monotonic() at receipt
    done: bool = False  # LoadGen's test is over: nothing more will arrive

    def take(self, requests: Connection) -> None:
        """One message from the LoadGen process: queries, or the end of the test."""
        kind, samples = requests.recv()
        if kind == "done":
            self.done = True
            return
        now = time.monotonic()
        self.ids.extend(query_id for query_id, _ in samples)
        self.arrived.extend([now] * len(samples))


@dataclass(frozen=True)
class Batcher:
    max_batch: int
    wait_s: float

    def serve(
        self, requests: Connection, responses: Connection, run_batch: Callable[[int], None]
    ) -> Counter[int]:
        """Answer one LoadGen test's queries until it says it is done; how many batches of
        each size were formed. Every query it issued has been answered by then (LoadGen's test
        ends only when all are)."""
        queued = _Queued()
        formed: Counter[int] = Counter()
        while True:
            if not queued.ids:
                queued.take(requests)  # block: nothing to do until a query arrives
            self._gather(queued, requests)
            if queued.ids:
                size = min(self.max_batch, len(queued.ids))
                answered = [queued.ids.popleft() for _ in range(size)]
                for _ in range(size):
                    queued.arrived.popleft()
                run_batch(size)
                responses.send(("answered", answered))
                formed[size] += 1
            elif queued.done:
                return formed

    def _gather(self, queued: _Queued, requests: Connection) -> None:
        """Take arrivals until the batch is full or its oldest query has waited wait_s."""
        while not queued.done and len(queued.ids) < self.max_batch:
            oldest = queued.arrived[0] if queued.arrived else time.monotonic()
            left = max(0.0, oldest + self.wait_s - time.monotonic())
            if not requests.poll(left):  # poll(0) still takes what has arrived already
                return
            queued.take(requests)
