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

While a batch generates, the pipe is read after every decode step (`backends/arrivals`: what
has arrived, without waiting), so a prompt's wait counts from its arrival, not from the batch's
end: where the oldest prompt has waited `wait_s` by the time a batch ends, the next one closes
at once, rather than the device idling `wait_s` more.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Protocol

from .arrivals import Arrivals

__all__ = ["Generate", "Hook", "TokenBatcher"]

Hook = Callable[[], None]


class Generate(Protocol):
    def __call__(self, size: int, first: Hook | None = None, step: Hook | None = None) -> None:
        """`size` prompts through greedy decoding of the configuration's new tokens, the device
        synchronized after the prefill and after every decode step; `first()` is called once
        the prefill's is (the first tokens exist), `step()` once each decode step's is. Their
        time is no phase's."""


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
        queued = Arrivals()
        formed: Counter[int] = Counter()
        while batch := queued.next_batch(requests, self.max_batch, self.wait_s):
            # the arrivals during the generation are read (and stamped) between its steps
            generate(len(batch), self._first(responses, batch), lambda: queued.take_ready(requests))
            responses.send(("tokens", [(query, self.new_tokens) for query in batch]))
            formed[len(batch)] += 1
        return formed

    def _first(self, responses: Connection, batch: list[int]) -> Hook | None:
        if not self.first_tokens:
            return None
        return lambda: responses.send(("first", batch))
