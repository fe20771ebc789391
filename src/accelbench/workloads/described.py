"""A workload as the command knows it: its facts, told by a worker that loaded it.

The user's code runs only in workers (issue 25): importing a model's file and calling its
factory can exit, fork, hang or change the directory, and none of that may reach the command.
So a worker loads a `--model` workload and sends back its `WorkloadFacts`, and the command
plans from a `DescribedWorkload` made of them: it answers every question planning asks (names,
default batch, input shape, classes, whether it is a language model and its lengths), and
refuses, as a bug, anything that would build or run the model.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, NoReturn

from torch import nn

from .base import Batch, Workload
from .llm import LanguageModel

__all__ = ["DescribedWorkload", "WorkloadFacts", "described", "facts_of"]


@dataclass(frozen=True)
class WorkloadFacts:
    """What planning needs of a workload, in plain values a pipe can carry."""

    name: str
    description: str
    batch_size: int
    steps_per_block: int
    default_blocks: int | None
    input_shape: tuple[int, ...]
    num_classes: int | None
    images: bool
    language_model: bool
    generates: bool = False  # a workloads.llm.LanguageModel: mode generate's lengths below
    attention: str = ""
    prompt_length: int | None = None
    new_tokens: int | None = None
    max_positions: int | None = None
    several_inputs: bool = False  # its forward takes a tuple or dict of tensors


def facts_of(workload: Workload) -> WorkloadFacts:
    """The facts of a loaded workload (in the worker: its properties may run its code)."""
    language: dict[str, Any] = {}
    if isinstance(workload, LanguageModel):
        language = {
            "attention": workload.attention,
            "prompt_length": workload.prompt_length,
            "new_tokens": workload.new_tokens,
            "max_positions": workload.max_positions,
        }
    return WorkloadFacts(
        name=workload.name,
        description=workload.description,
        batch_size=workload.batch_size,
        steps_per_block=workload.steps_per_block,
        default_blocks=workload.default_blocks,
        input_shape=tuple(workload.input_shape),
        num_classes=workload.num_classes,
        images=workload.images,
        language_model=workload.language_model,
        several_inputs=workload.several_inputs,
        generates=bool(language),
        **language,
    )


class DescribedWorkload(Workload):
    """A workload planned from its facts; the model itself exists only in workers."""

    def __init__(self, facts: WorkloadFacts) -> None:
        self.facts = facts
        for name, value in asdict(facts).items():
            if name not in ("images", "max_positions", "generates", "several_inputs"):
                setattr(self, name, value)

    @property
    def images(self) -> bool:
        return self.facts.images

    @property
    def several_inputs(self) -> bool:
        return self.facts.several_inputs

    def build_model(self) -> nn.Module:
        _in_a_worker_only("build")

    def make_batch(self, generator: Any, batch_size: int) -> Batch:
        _in_a_worker_only("make a batch for")


class DescribedLanguageModel(DescribedWorkload, LanguageModel):
    """A language model planned from its facts (mode generate's lengths among them)."""

    @property
    def max_positions(self) -> int | None:
        return self.facts.max_positions

    def config(self) -> Any:
        _in_a_worker_only("configure")


def described(facts: WorkloadFacts) -> Workload:
    """The workload the command plans with, from a worker's facts."""
    kind = DescribedLanguageModel if facts.generates else DescribedWorkload
    return kind(facts)


def _in_a_worker_only(what: str) -> NoReturn:
    raise RuntimeError(f"accelbench bug: the command tried to {what} the model; only workers may")
