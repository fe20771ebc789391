"""Mode "generate": a language model's greedy decoding of exactly N new tokens after a prompt,
the prefill and each decoded token timed apart (the loop: backends/generate)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..analysis.facts import (
    DECODE_FLOPS_PER_SEQUENCE,
    GENERATION,
    PREFILL_FLOPS_PER_SEQUENCE,
    Generation,
)
from ..core.mode_options import Count
from ..core.modes import Mode, Rule, register_mode
from ..core.result import Result, RunSpec
from ..errors import UsageError, WorkloadError

if TYPE_CHECKING:
    from ..core.peaks import PeakFigures
    from ..core.stats import Measurement
    from ..levers import Prepared
    from ..workloads import Workload

__all__ = ["Generate", "NEW_TOKENS", "PROMPT_LENGTH"]

PROMPT_LENGTH = Count(
    "prompt_length",
    option="--prompt-lengths",
    single="--prompt-length",
    help="prompt tokens (default: the model's, 128 for gpt2)",
    prefix="p",
    workload_attr="prompt_length",  # workloads.llm.LanguageModel's, and its described facts'
)
NEW_TOKENS = Count(
    "new_tokens",
    option="--new-tokens",
    single="--new-tokens",
    help="tokens decoded after the prompt, exactly, no end token stops them (default: the "
    "model's, 32 for gpt2)",
    prefix="n",
    workload_attr="new_tokens",
)


@register_mode
class Generate(Mode):
    name = "generate"
    help = "a language model's greedy decoding after a prompt, prefill and tokens timed apart"
    decodes = True
    probes = False  # a generation's phases carry their own "why"
    rate_unit = "tokens/s"
    options = (PROMPT_LENGTH, NEW_TOKENS)

    def units_per_sample(self, spec: RunSpec) -> int:
        """Each sequence of the batch yields its new tokens: the rate is tokens/s."""
        return NEW_TOKENS.of(spec) if NEW_TOKENS.value(spec) is not None else 1

    def check_args(self, spec: RunSpec, workload: Workload) -> None:
        """A causal language model, with room for the prompt and the new tokens."""
        from ..workloads import list_workloads
        from ..workloads.llm import LanguageModel

        if not isinstance(workload, LanguageModel):
            models = ", ".join(w.name for w in list_workloads() if isinstance(w, LanguageModel))
            raise UsageError(
                f"mode generate needs a causal language model, and {workload.name} is not "
                f"one; valid: {models}, or a --model factory returning a transformers model "
                "whose can_generate() is true"
            )
        prompt, new, longest = PROMPT_LENGTH.of(spec), NEW_TOKENS.of(spec), workload.max_positions
        if longest is not None and prompt + new - 1 > longest:
            raise UsageError(
                f"a prompt of {prompt} tokens and {new} new tokens need {prompt + new - 1} "
                f"positions, more than {workload.name}'s {longest}: shorten --prompt-lengths "
                "or --new-tokens"
            )

    def build_step(self, prep: Prepared) -> Callable[[], None]:
        from ..backends.generate import generation_step

        return generation_step(prep)

    def inputs(self, spec: RunSpec, workload: Workload, generator: Any) -> Any:
        """The prompt, and no targets."""
        import torch

        from ..workloads.llm import LanguageModel

        prompt, new = PROMPT_LENGTH.value(spec), NEW_TOKENS.value(spec)
        if not isinstance(workload, LanguageModel) or not prompt or not new:
            raise WorkloadError(
                f"generate needs a language model, a prompt length and new tokens; "
                f"{spec.workload} with prompt {prompt} and {new} new tokens is not that"
            )
        return workload.prompt(generator, spec.batch_size, PROMPT_LENGTH.of(spec)), torch.empty(0)

    def model_facts(self, workload: Workload, spec: RunSpec) -> dict[str, Any]:
        """The forward FLOPs of the prefill and of one decode step, per sequence."""
        from ..analysis.bandwidth import count_prefill_flops
        from ..workloads.llm import LanguageModel

        if not isinstance(workload, LanguageModel) or PROMPT_LENGTH.value(spec) is None:
            return {}
        return {
            PREFILL_FLOPS_PER_SEQUENCE: count_prefill_flops(workload, PROMPT_LENGTH.of(spec)),
            # a one-token forward is the decode step's work but its attention over the cache
            DECODE_FLOPS_PER_SEQUENCE: count_prefill_flops(workload, 1),
        }

    def derive(self, result: Result, peaks: PeakFigures | None) -> Result:
        """A generation's bandwidth share and prefill MFU (analysis/bandwidth), in place of
        the closed loop's FLOP/s and verdict: its phases have figures of their own."""
        from ..analysis.bandwidth import generation_figures

        found, metrics = result.facts.get(Generation), result.metrics
        if found is None:
            return result
        prefill = _number(metrics.get(PREFILL_FLOPS_PER_SEQUENCE))
        decode = _number(metrics.get(DECODE_FLOPS_PER_SEQUENCE))
        figures = generation_figures(found, result.spec.precision, peaks, prefill, decode)
        return replace(result, metrics={**metrics, GENERATION: {**metrics[GENERATION], **figures}})

    def recorded(
        self, recorded: dict[str, Any], measurement: Measurement, spec: RunSpec
    ) -> dict[str, Any]:
        """Every generation's phases were logged (backends/generate): keep the timed ones'."""
        if GENERATION in recorded:
            log = recorded[GENERATION]
            recorded = {**recorded, GENERATION: log.summary(measurement, spec.steps_per_block)}
        return recorded

    def merge_processes(self, before: dict[str, Any], latest: dict[str, Any]) -> dict[str, Any]:
        """Every process's timed generations together, their percentiles taken anew."""
        if GENERATION not in before or GENERATION not in latest:
            return {}
        a, b = before[GENERATION], latest[GENERATION]
        out = {**a}
        for name in ("prefill_s", "decode_s", "token_s"):
            out[name] = [*a.get(name, ()), *b.get(name, ())]
        steps = [s for sample in out["token_s"] for s in sample]
        if steps and a.get("token_p50_s") is not None:
            merged = Generation.from_metrics({GENERATION: out})
            assert merged is not None
            out["token_p50_s"], out["token_p90_s"] = Generation.step_percentiles(steps)
            tpot = merged.tpot_median_s
            assert tpot is not None  # decode steps were timed
            out["decode_tokens_per_s"] = merged.batch_size / tpot
            if merged.bytes_per_token is not None:
                out["achieved_bandwidth"] = merged.bytes_per_token / tpot
        return {GENERATION: out}

    def sample_rule(self, rule: Rule) -> Rule:
        """Each generation is synchronized at every token already: each its own sample, no
        grouping of short blocks into one."""
        return replace(rule, min_sample_s=0.0)  # type: ignore[type-var]

    def own_drift(self, prep: Prepared) -> dict[str, Any]:
        from ..backends.generate import generation_drift

        return generation_drift(prep)


def _number(value: Any) -> float | None:
    return None if value is None else float(value)
