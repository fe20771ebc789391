"""LoadGen's queries as they arrive in the process that runs the model (from `backends/loadgen`'s
process, over a pipe), each stamped when it is read: the queue both request loops form their
batches from (`backends/batcher`, a classifier's; `backends/token_batcher`, a language model's).

A query's wait counts from when it is read, so a loop reads the pipe whenever it can while the
device works (between a batch's launch and its end, or between decode steps), not only between
batches: a query read late would have its wait bound start again after it had already waited.
"""

from __future__ import annotations

import select
import time
from collections import deque
from dataclasses import dataclass, field
from multiprocessing.connection import Connection

__all__ = ["Arrivals", "readable"]


@dataclass
class Arrivals:
    ids: deque[int] = field(default_factory=deque)
    arrived: deque[float] = field(default_factory=deque)  # time.monotonic() at receipt
    done: bool = False  # LoadGen's test is over: nothing more will arrive

    def take(self, requests: Connection) -> None:
        """One message from the LoadGen process: queries, or the end of the test. It blocks
        until one is there."""
        kind, samples = requests.recv()
        if kind == "done":
            self.done = True
            return
        now = time.monotonic()
        self.ids.extend(query_id for query_id, _ in samples)
        self.arrived.extend([now] * len(samples))

    def take_ready(self, requests: Connection) -> None:
        """Every message already there, without waiting for one."""
        while not self.done and readable(requests, 0.0):
            self.take(requests)

    def gather(self, requests: Connection, max_batch: int, wait_s: float) -> None:
        """Take arrivals until `max_batch` queries are queued or the oldest has waited
        `wait_s` (at once where it already has: what has arrived is still taken)."""
        while not self.done and len(self.ids) < max_batch:
            oldest = self.arrived[0] if self.arrived else time.monotonic()
            left = max(0.0, oldest + wait_s - time.monotonic())
            if not readable(requests, left):
                return
            self.take(requests)

    def next_batch(self, requests: Connection, max_batch: int, wait_s: float) -> list[int]:
        """The next batch's queries, oldest first: up to `max_batch`, once that many are
        queued or the oldest has waited `wait_s` (it blocks while none is queued); [] once
        LoadGen's test is over and every query has been taken."""
        while True:
            if not self.ids and not self.done:
                self.take(requests)  # block: nothing to do until a query arrives
            self.gather(requests, max_batch, wait_s)
            if self.ids:
                return self.pop(min(max_batch, len(self.ids)))
            if self.done:
                return []

    def pop(self, size: int) -> list[int]:
        """The `size` oldest queries, out of the queue."""
        for _ in range(size):
            self.arrived.popleft()
        return [self.ids.popleft() for _ in range(size)]


def readable(requests: Connection, timeout: float) -> bool:
    """Whether a message is there, waiting for one at most `timeout` seconds. select, not the
    Connection's poll: poll rounds a wait up to whole milliseconds (a 0.5 ms wait took 1.1)."""
    return bool(select.select([requests], [], [], timeout)[0])
