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
from ..analysis.drift import cached, compare_generations, kept_positions, logit_figures
from ..analysis.facts import GENERATION, Generation, generation_lengths
from ..core.result import RunSpec
from ..core.stats import Measurement
from ..levers import Prepared
from ..workloads.inputs import leading
from ..workloads.llm import KVLayout, LanguageModel, forward_with_cache
from ..workloads.weights import build_seeded

__all__ = [
    "GenerationLog",
    "KeptLogits",
    "Phases",
    "generate_once",
    "generation_drift",
    "generation_step",
]

Clock = Callable[[], float]


@dataclass(frozen=True)
class Phases:
    """One generation: time to the first token, each decode step, and the tokens made."""

    prefill_s: float
    token_s: tuple[float, ...]  # new_tokens - 1 decode steps
    tokens: torch.Tensor  # (batch, new_tokens) token ids
    first_logits: torch.Tensor | None = None  # (batch, vocabulary): the prefill's, if forced


def generate_once(
    model: nn.Module,
    prompt: torch.Tensor,
    new_tokens: int,
    synchronize: Callable[[], None],
    clock: Clock = time.perf_counter,
    cache: Any = None,
    decode: Callable[..., Any] | None = None,
    forced: torch.Tensor | None = None,
    keep_logits: bool = False,
    on_logits: Callable[[torch.Tensor], None] | None = None,
    on_first: Callable[[], None] | None = None,
    on_step: Callable[[], None] | None = None,
) -> Phases:
    """Greedy decoding of exactly `new_tokens` tokens after `prompt` (no end token stops it):
    the prefill makes the first, each decode step one more from the last logits' argmax. The
    device is synchronized after the prefill and after every step, so each time is its own.

    A `cache` given (a static one) is reset first, outside the timed phases; else the prefill
    makes a new one. `decode` is the forward of the decode steps where it is not the model's
    (a compiled one); the prefill runs the model's own, as `generate()` does. With `forced`
    token ids (batch, new_tokens), each step is fed forced's token rather than its own last
    (teacher forcing, for drift: every prediction is made in the reference's context); the
    tokens returned are still its own predictions. The first logits are kept when forced or
    `keep_logits`; `on_logits`, for drift, sees every step's (batch, vocabulary) logits. For
    serving, `on_first` is called once the first tokens exist and `on_step` after each decode
    step (the arrivals are read there), their time no phase's (`_after`)."""
    position = torch.arange(prompt.shape[1], device=prompt.device)
    if cache is not None:
        cache.reset()
    synchronize()  # nothing of this before the prefill's clock starts
    start = clock()
    logits, token, cache = _greedy_step(model, prompt, cache, position, None, on_logits)
    synchronize()
    prefill_s = (now := clock()) - start
    before = _after(on_first, clock, now)
    # a view would keep the whole prefill's logits alive (a model without logits_to_keep)
    first = logits.clone() if forced is not None or keep_logits else None
    made, steps = [token], []
    for i in range(new_tokens - 1):
        position = position[-1:] + 1  # on the device: no copy from the host each step
        # contiguous, as the timed steps' tokens are: a compiled step guards on strides
        fed = token if forced is None else forced[:, i : i + 1].contiguous()
        # rebinding `logits` lets the prefill's go, as soon as the first step has its own
        logits, token, cache = _greedy_step(model, fed, cache, position, decode, on_logits)
        made.append(token)
        synchronize()
        steps.append((now := clock()) - before)
        before = _after(on_step, clock, now)
    return Phases(prefill_s, tuple(steps), torch.cat(made, dim=1), first)


def _after(hook: Callable[[], None] | None, clock: Clock, now: float) -> float:
    """The reading the next phase is timed from, given the clock's at the end of the last:
    that one, or, where a hook runs between the two, one taken after it."""
    if hook is None:
        return now
    hook()
    return clock()


def _greedy_step(
    model: nn.Module,
    fed: torch.Tensor,
    cache: Any,
    position: torch.Tensor,
    decode: Callable[..., Any] | None,
    on_logits: Callable[[torch.Tensor], None] | None,
) -> tuple[torch.Tensor, torch.Tensor, Any]:
    """One forward of `generate_once` (the prefill's, or a decode step's): the last position's
    logits, their argmax as the next token, and the cache grown by `fed`."""
    logits, cache = forward_with_cache(model, fed, cache, position, decode)
    token = logits.argmax(dim=-1, keepdim=True)
    if on_logits is not None:  # drift's generations, whose times are not kept
        on_logits(logits)
    return logits, token, cache


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
    # A static cache's allocated positions: its attention reads all of them at every step
    # (masked), not the current length. None: a dynamic cache.
    static_length: int | None = None
    compiled: bool = False  # the decode steps run a compiled forward
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
            "token_s": [list(steps) for steps in tokens],  # the raw samples of each step
            **(_compile_counters() if self.compiled else {}),
            "weight_bytes": self.weight_bytes,
            # the cache at the end: a static one is allocated whole from the start
            "kv_cache_bytes": int(
                self._kv(self.static_length or self.prompt_length + self.new_tokens - 1)
            ),
        }
        if every:
            p50, p90 = Generation.step_percentiles(every)
            positions = self.static_length or mean_decode_length(
                self.prompt_length, self.new_tokens
            )
            kv = self._kv(positions)
            tpot = statistics.median(decode) / (self.new_tokens - 1)  # Generation's TPOT
            out.update(
                token_p50_s=p50,
                token_p90_s=p90,
                decode_tokens_per_s=self.batch_size / tpot,
                kv_bytes_per_token=kv,
                kv_read_positions=positions,
                static_cache=self.static_length is not None,
                achieved_bandwidth=(self.weight_bytes + kv) / tpot,
            )
        return out

    def _kv(self, length: float) -> float:
        return kv_cache_bytes(self.layout, length, self.batch_size, self.cache_dtype_bytes)


def generation_step(prep: Prepared, clock: Clock = time.perf_counter) -> Callable[[], None]:
    """The timed step of a generate configuration: one generation, logged in `prep.info`."""
    spec, workload, model = prep.spec, prep.workload, prep.model
    assert isinstance(workload, LanguageModel)
    weights = list(model.parameters())  # each tensor once, tied embeddings included
    prompt, new = generation_lengths(spec)
    log = GenerationLog(
        prompt_length=prompt,
        new_tokens=new,
        batch_size=spec.batch_size,
        weight_bytes=sum(p.numel() * p.element_size() for p in weights),
        layout=workload.kv_layout(),
        # the cache holds what the layers compute: autocast's dtype, else the weights'
        cache_dtype_bytes=_element_size(prep.autocast_dtype or weights[0].dtype),
        static_length=_static_length(prep.kv_cache),
        compiled=prep.decode is not None,
    )
    prep.info[GENERATION] = log

    def generate_step() -> None:
        log.add(_generate(prep, None, clock))

    return generate_step


def generation_drift(prep: Prepared, seed: int = 0) -> dict[str, Any]:
    """This configuration's generation against fp32 eager's on the CPU, from the same weights
    and prompt (`build` seeds both with `seed`). Each step's prediction is compared in fp32's
    context (fed fp32's tokens): once one token differs, a free-running text goes another way,
    and every later position would count as a difference the variant did not make. Its logits
    at each step are compared with fp32's there (`compare_generations`). One free generation
    too gives the leading tokens that agree, as information."""
    spec, workload = prep.spec, prep.workload
    assert isinstance(workload, LanguageModel)
    prompt, new = generation_lengths(spec)
    key = f"generate-b{spec.batch_size}-p{prompt}-n{new}-s{seed}"
    reference = cached(key, lambda: _reference_generation(workload, spec, seed))
    kept = KeptLogits(*reference["kept"].shape[:2])
    forced = _generate(prep, reference["tokens"].to(leading(prep.batch[0]).device), on_logits=kept)
    free = _generate(prep, None)
    assert forced.first_logits is not None
    return compare_generations(
        reference, forced.tokens, forced.first_logits, free.tokens, kept.stacked()
    )


@dataclass
class KeptLogits:
    """What drift keeps of a generation's logits, step by step: those of the first `rows`
    sequences at the first `steps` steps (`analysis.drift.kept_positions`) and, with
    `figures` (the reference's), every position's spread and top token's lead."""

    rows: int
    steps: int
    figures: bool = False
    logits: list[torch.Tensor] = field(default_factory=list)
    spread: list[torch.Tensor] = field(default_factory=list)
    lead: list[torch.Tensor] = field(default_factory=list)

    def __call__(self, logits: torch.Tensor) -> None:
        if len(self.logits) < self.steps:
            # a copy: a CUDA graph's replay writes its next logits into the same memory
            self.logits.append(logits[: self.rows].to("cpu", torch.float32, copy=True))
        if self.figures:
            spread, lead = logit_figures(logits)
            self.spread.append(spread.cpu())
            self.lead.append(lead.cpu())

    def stacked(self) -> torch.Tensor:
        """The kept logits, (rows, steps, vocabulary)."""
        return torch.stack(self.logits, dim=1)


def _generate(
    prep: Prepared,
    forced: torch.Tensor | None,
    clock: Clock = time.perf_counter,
    on_logits: Callable[[torch.Tensor], None] | None = None,
) -> Phases:
    """One generation of the configuration `prep` holds, as its timed step runs it."""
    with torch.inference_mode(), prep.autocast():
        return generate_once(
            prep.model,
            leading(prep.batch[0]),  # a language model's one input: the prompt's token ids
            generation_lengths(prep.spec)[1],
            prep.device.synchronize,
            clock,
            cache=prep.kv_cache,
            decode=prep.decode,
            forced=forced,
            on_logits=on_logits,
        )


def _reference_generation(workload: LanguageModel, spec: RunSpec, seed: int) -> dict[str, Any]:
    model = build_seeded(workload, seed).eval()  # as build() does: the same weights
    generator = torch.Generator().manual_seed(seed)
    prompt_length, new = generation_lengths(spec)
    prompt = workload.prompt(generator, spec.batch_size, prompt_length)
    kept = KeptLogits(*kept_positions(spec.batch_size, new, workload.vocab_size), figures=True)
    with torch.inference_mode():
        phases = generate_once(model, prompt, new, lambda: None, keep_logits=True, on_logits=kept)
    assert phases.first_logits is not None
    return {
        "tokens": phases.tokens,
        "logits": phases.first_logits.float(),
        "kept": kept.stacked(),
        "spread": torch.stack(kept.spread, dim=1),
        "lead": torch.stack(kept.lead, dim=1),
    }


def _static_length(cache: Any) -> int | None:
    """The positions a static cache holds: its max_cache_len, by the name transformers gives
    it (get_max_length from 5.2x, get_max_cache_shape before); None without a cache."""
    if cache is None:
        return None
    for name in ("get_max_length", "get_max_cache_shape"):
        if callable(read := getattr(cache, name, None)):
            found = int(read())
            if found > 0:  # -1: no maximum (a dynamic cache)
                return found
    raise RuntimeError(f"{type(cache).__name__} does not say how many positions it holds")


def _compile_counters() -> dict[str, Any]:
    """What torch.compile did in this process, so that a row labelled compiled says whether
    its decode step ran as one graph: graph breaks, and CUDA graphs skipped (reduce-overhead
    falls back to the compiled kernels alone, silently, for a step it cannot capture)."""
    from torch._dynamo.utils import counters

    return {
        "graph_breaks": int(sum(counters["graph_break"].values())),
        "cudagraph_skips": int(counters["inductor"]["cudagraph_skips"]),
    }


def _element_size(dtype: torch.dtype) -> int:
    return torch.empty((), dtype=dtype).element_size()
