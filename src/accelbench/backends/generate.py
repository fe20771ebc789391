"""Mode "generate" on PyTorch: greedy decoding of exactly N new tokens through the model's own
forward with its KV cache, the prefill and every decode step synchronized and timed apart.

`generate()` is not used: it stops at an end token (so devices would do different work) and
runs prefill and decode in one call, whose phases could only be told apart by subtraction.
Here one step of the timing loop is one whole generation (the end-to-end sample); the phases of
each generation are logged, and the runner keeps the timed generations' (`GenerationLog`).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from ..analysis.bandwidth import kv_cache_bytes, mean_decode_length
from ..core import metrics as keys
from ..core.stats import Measurement
from ..levers import Prepared
from ..workloads.llm import KVLayout, LanguageModel, forward_with_cache

__all__ = ["GenerationLog", "Phases", "generate_once", "generation_step"]

Clock = Callable[[], float]


@dataclass(frozen=True)
class Phases:
    """One generation: time to the first token, each decode step, and the tokens made."""

    prefill_s: float
    token_s: tuple[float, ...]  # new_tokens - 1 decode steps
    tokens: torch.Tensor  # (batch, new_tokens) token ids


def generate_once(
    model: nn.Module,
    prompt: torch.Tensor,
    new_tokens: int,
    synchronize: Callable[[], None],
    clock: Clock = time.perf_counter,
) -> Phases:
    """Greedy decoding of exactly `new_tokens` tokens after `prompt` (no end token stops it):
    the prefill makes the first, each decode step one more from the last logits' argmax. The
    device is synchronized after the prefill and after every step, so each time is its own."""
    start = clock()
    logits, cache = forward_with_cache(model, prompt, None)
    token = logits.argmax(dim=-1, keepdim=True)
    synchronize()
    before = clock()
    prefill_s, made, steps = before - start, [token], []
    for _ in range(new_tokens - 1):
        logits, cache = forward_with_cache(model, token, cache)
        token = logits.argmax(dim=-1, keepdim=True)
        made.append(token)
        synchronize()
        now = clock()
        steps.append(now - before)
        before = now
    return Phases(prefill_s, tuple(steps), torch.cat(made, dim=1))


@dataclass
class GenerationLog:
    """Every generation's phases in order, warm-up first, and what sizes the bytes a decode
    step reads; `summary` keeps the timed ones (the runner calls it after the samples)."""

    prompt_length: int
    new_tokens: int
    batch_size: int
    weight_bytes: int
    layout: KVLayout
    cache_dtype_bytes: int
    prefill_s: list[float] = field(default_factory=list)
    token_s: list[tuple[float, ...]] = field(default_factory=list)
    generated_tokens: int = 0

    def add(self, phases: Phases) -> None:
        self.prefill_s.append(phases.prefill_s)
        self.token_s.append(phases.token_s)
        self.generated_tokens = int(phases.tokens.shape[1])

    def summary(self, measurement: Measurement, steps_per_block: int = 1) -> dict[str, Any]:
        """The `generation` metrics group of the timed generations (the last ones logged)."""
        timed = len(measurement.samples) * measurement.repeat * steps_per_block
        prefill, tokens = self.prefill_s[-timed:], self.token_s[-timed:]
        decode = [sum(steps) for steps in tokens]
        every = [s for steps in tokens for s in steps]
        out: dict[str, Any] = {
            "prompt_length": self.prompt_length,
            "new_tokens": self.new_tokens,
            "batch_size": self.batch_size,
            "generated_tokens": self.generated_tokens,
            "prefill_s": prefill,
            "decode_s": decode,
            "weight_bytes": self.weight_bytes,
            "kv_cache_bytes": int(self._kv(self.prompt_length + self.new_tokens - 1)),
        }
        if every:
            p50 = statistics.median(every)
            kv = self._kv(mean_decode_length(self.prompt_length, self.new_tokens))
            out.update(
                token_p50_s=p50,
                token_p90_s=_p90(every),
                decode_tokens_per_s=self.batch_size
                * (self.new_tokens - 1)
                / statistics.median(decode),
                kv_bytes_per_token=kv,
                achieved_bandwidth=(self.weight_bytes + kv) / p50,
            )
        return out

    def _kv(self, length: float) -> float:
        return kv_cache_bytes(self.layout, length, self.batch_size, self.cache_dtype_bytes)


def _p90(values: list[float]) -> float:
    if len(values) < 2:
        return values[0]
    return statistics.quantiles(values, n=10, method="inclusive")[-1]


def generation_step(prep: Prepared, clock: Clock = time.perf_counter) -> Callable[[], None]:
    """The timed step of a generate configuration: one generation, logged in `prep.info`."""
    spec, workload, model = prep.spec, prep.workload, prep.model
    assert isinstance(workload, LanguageModel) and spec.new_tokens and spec.prompt_length
    weights = list(model.parameters())  # each tensor once, tied embeddings included
    log = GenerationLog(
        prompt_length=spec.prompt_length,
        new_tokens=spec.new_tokens,
        batch_size=spec.batch_size,
        weight_bytes=sum(p.numel() * p.element_size() for p in weights),
        layout=workload.kv_layout(),
        # the cache holds what the layers compute: autocast's dtype, else the weights'
        cache_dtype_bytes=_element_size(prep.autocast_dtype or weights[0].dtype),
    )
    prep.info[keys.GENERATION] = log
    prompt, new_tokens, synchronize = prep.batch[0], spec.new_tokens, prep.device.synchronize

    def generate_step() -> None:
        with torch.inference_mode(), prep.autocast():
            log.add(generate_once(model, prompt, new_tokens, synchronize, clock))

    return generate_step


def _element_size(dtype: torch.dtype) -> int:
    return torch.empty((), dtype=dtype).element_size()
