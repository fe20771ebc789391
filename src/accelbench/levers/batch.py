"""A larger batch: more samples per step, so fixed per-step costs (launches, the optimizer's
loop over parameters) are spread over more samples, at the cost of memory.

It is a lever of the optimization search only: the batch is a field of every configuration
(`run --batch-sizes`), so this lever has no option and stores nothing; it offers the best stack
at twice its batch, and again while that pays. It is never recommended silently: for training a
larger batch changes the optimization itself (the learning rate may need retuning).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from ..core.modes import mode_of
from ..core.result import RunSpec, Value
from .base import Lever, Variant, register

if TYPE_CHECKING:
    from ..devices import Device
    from ..workloads import Workload

MOST_DOUBLINGS = 4  # 16x the batch asked for: beyond that the question is a different model


@register
class LargerBatch(Lever):
    name = "batch"
    title = "a larger batch"
    option = ""  # the batch is RunSpec.batch_size, which `run --batch-sizes` sets
    default = 0  # the batch asked for
    offered = True
    opt_in = ("batch",)  # it changes what is optimized: only when asked for
    generates = True  # more sequences per decode step: the weights are read once for all

    def parse(self, word: str) -> Value:
        from .threads import positive_count

        return positive_count(word)

    def check(self, value: object) -> None:
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"a batch is a whole number, not {value!r}")

    def value(self, spec: RunSpec) -> Value:
        return 0  # the field says the batch; this lever marks nothing in a configuration

    def assign(self, spec: RunSpec, value: Value) -> RunSpec:
        return replace(spec, batch_size=int(value)) if value else spec

    def active(self, spec: RunSpec) -> bool:
        return False

    def variants(self, base: RunSpec, device: Device, workload: Workload) -> list[Variant]:
        """`base` (the best stack so far) at twice its batch."""
        if base.batch_size >= workload.batch_size * 2**MOST_DOUBLINGS:
            return []
        doubled = base.batch_size * 2
        return [Variant(f"batch {doubled}", self.assign(base, doubled), self.name)]

    def code(self, spec: RunSpec, device: Device) -> list[str]:
        return [f"batch_size = {spec.batch_size}  # {self.caveat(spec)}"]

    @staticmethod
    def caveat(spec: RunSpec) -> str:
        """What a user must know before taking the larger batch."""
        if mode_of(spec).trains:
            return (
                "a larger batch changes the optimization: the learning rate (and warm-up) may "
                "need retuning, and convergence is not measured here"
            )
        return "a larger batch raises throughput and each request's latency"
