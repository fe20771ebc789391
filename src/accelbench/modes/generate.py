"""Mode "generate": a language model's greedy decoding of exactly N new tokens after a prompt,
the prefill and each decoded token timed apart (the loop: backends/generate)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..core.modes import Mode, Rule, register_mode
from ..core.result import RunSpec
from ..errors import WorkloadError

if TYPE_CHECKING:
    from ..levers import Prepared
    from ..workloads import Workload

__all__ = ["Generate"]


@register_mode
class Generate(Mode):
    name = "generate"
    help = "a language model's greedy decoding after a prompt, prefill and tokens timed apart"
    decodes = True
    probes = False  # a generation's phases carry their own "why"
    rate_unit = "tokens/s"

    def build_step(self, prep: Prepared) -> Callable[[], None]:
        from ..backends.generate import generation_step

        return generation_step(prep)

    def inputs(self, spec: RunSpec, workload: Workload, generator: Any) -> Any:
        """The prompt, and no targets."""
        import torch

        from ..workloads.llm import LanguageModel

        if not isinstance(workload, LanguageModel) or not spec.prompt_length or not spec.new_tokens:
            raise WorkloadError(
                f"generate needs a language model, a prompt length and new tokens; "
                f"{spec.workload} with prompt {spec.prompt_length} and {spec.new_tokens} new "
                f"tokens is not that"
            )
        return workload.prompt(generator, spec.batch_size, spec.prompt_length), torch.empty(0)

    def sample_rule(self, rule: Rule) -> Rule:
        """Each generation is synchronized at every token already: each its own sample, no
        grouping of short blocks into one."""
        return replace(rule, min_sample_s=0.0)  # type: ignore[type-var]

    def own_drift(self, prep: Prepared) -> dict[str, Any]:
        from ..backends.generate import generation_drift

        return generation_drift(prep)
