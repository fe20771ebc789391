"""A language model's request loop: in the process that runs the model, LoadGen's queries
(each one prompt, from `backends/loadgen`'s process over a pipe) are gathered into static
batches and answered token by token.

Static batching, the simplest honest scheme: a batch closes when it holds `max_batch` prompts or
its oldest has waited `wait_s`; its prefill runs, the device is synchronized, and every prompt's
first token goes to LoadGen at once (FirstTokenComplete: its TTFT ends there); then the batch
decodes its other tokens together, and when the last is synchronized every answer goes to
LoadGen with its token count (QuerySamplesComplete: its TPOT is the time after the first token
over the tokens after it). Prompts that arrive meanwhile wait for the whole batch to finish:
under load their TTFT grows first. Continuous batching (a prompt joining the batch between
decode steps) is not built.
"""

from __future__ import annotations

import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection

__all__ = ["Generate", "TokenBatcher"]

# generate(n, first): n prompts through greedy decoding of the configuration's new tokens, the
# device synchronized after the prefill and at the end; first() is called after the prefill's
Generate = Callable[[int, Callable[[], None] | None], None]


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
class TokenBatcher:
    max_batch: int
    wait_s: float
    new_tokens: int  # each answer's tokens, as LoadGen counts them (at least 2)
    first_tokens: bool = True  # send first tokens (Offline has no TTFT: LoadGen wants none)

    def serve(
        self, requests: Connection, responses: Connection, generate: Generate
    ) -> Counter[int]:
        """Answer one LoadGen test's prompts until it says it is done; how many batches of
        each size were formed."""
        queued = _Queued()
        formed: Counter[int] = Counter()
        while True:
            if not queued.ids and not queued.done:
                queued.take(requests)  # block: nothing to do until a prompt arrives
            self._gather(queued, requests)
            if not queued.ids:
                if queued.done:
                    return formed
                continue
            batch = [queued.ids.popleft() for _ in range(min(self.max_batch, len(queued.ids)))]
            for _ in batch:
                queued.arrived.popleft()
            generate(len(batch), self._first(responses, batch))
            responses.send(("tokens", [(query, self.new_tokens) for query in batch]))
            formed[len(batch)] += 1

    def _first(self, responses: Connection, batch: list[int]) -> Callable[[], None] | None:
        if not self.first_tokens:
            return None
        return lambda: responses.send(("first", batch))

    def _gather(self, queued: _Queued, requests: Connection) -> None:
        """Take arrivals until the batch is full or its oldest prompt has waited wait_s."""
        while not queued.done and len(queued.ids) < self.max_batch:
            oldest = queued.arrived[0] if queued.arrived else time.monotonic()
            left = max(0.0, oldest + self.wait_s - time.monotonic())
            if not requests.poll(left):  # poll(0) still takes what has arrived already
                return
            queued.take(requests)
