"""torch.compile, with a mode."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from ..core.modes import mode_of
from ..core.result import RunSpec, Value
from .base import Lever, Prepared, Variant, register

if TYPE_CHECKING:
    from ..devices import Device
    from ..workloads import Workload

# max-autotune's kernel search took 143 s on seed 000's CNN where the default mode's compile
# took 11 s (H200, BENCHMARKS.md): the search budgets it at ten times the stack it refines.
AUTOTUNE_COST = 10.0
MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


# Inductor imports torch.utils.cpp_extension to build its C++ kernels, and that module warns
# "No CUDA runtime is found, using CUDA_HOME=..." whenever a CUDA toolkit is installed but no
# CUDA device is usable: true, and irrelevant to a compile for the CPU (no CUDA kernel can be
# built without a runtime anyway), yet it reached the user's terminal from every such worker.
_CPP_EXTENSION_LOGGER = "torch.utils.cpp_extension"
_NO_CUDA_RUNTIME = "No CUDA runtime is found"


def _not_no_cuda_runtime(record: logging.LogRecord) -> bool:
    return not str(record.msg).startswith(_NO_CUDA_RUNTIME)


def _quiet_cuda_home() -> None:
    """Drop that one warning, and nothing else the module logs."""
    logger = logging.getLogger(_CPP_EXTENSION_LOGGER)
    if _not_no_cuda_runtime not in logger.filters:
        logger.addFilter(_not_no_cuda_runtime)


@register
class Compile(Lever):
    name = "compile"
    title = "torch.compile"
    option = "--compile"
    help = (
        f"torch.compile: {', '.join(('off', *MODES))} (default: off); on --modes generate, "
        "the decode step, with --kv-cache static"
    )
    dimension = "compile"
    default = ""  # eager
    words = ("off", *MODES)
    stage = 50  # after DDP: PyTorch compiles the DDP module
    searched = True
    setup_cost = True  # compiles: tried once, last (workflows/search)
    opt_in = ("autotune",)  # max-autotune-no-cudagraphs: minutes of kernel search
    generates = True  # the decode step, on a static KV cache

    @property
    def ladder_groups(self) -> tuple[str, ...]:
        return ("compile", "autotune")

    def from_word(self, word: str) -> Value:
        return "" if word == "off" else word

    def word(self, value: Value) -> str:
        return str(value) or "off"

    def label(self, value: Value) -> str:
        return "compile" if value == "default" else f"compile:{value}"

    def unsupported(self, spec: RunSpec, device: Device, workload: Workload) -> str | None:
        if mode_of(spec).decodes and not spec.lever("kv_cache", ""):
            return (
                "a dynamic KV cache changes the decode step's shapes at every token, so "
                "torch.compile would recompile; add --kv-cache static"
            )
        return device.compile_unsupported() or None  # MPS before PyTorch 2.8, say

    def apply_model(self, prep: Prepared, value: Value) -> None:
        import torch

        _quiet_cuda_home()
        # Compilation happens lazily on the first call: in the first warm-up block.
        if mode_of(prep.spec).decodes:
            # The decode steps only, one shape each (dynamic=False: the prefill's shape must
            # not make them dynamic); the prefill runs eagerly and fills the static cache
            # outside any graph, as transformers' compiled generate() does.
            forward = prep.model.forward
            prep.decode = torch.compile(forward, mode=str(value), dynamic=False)
            return
        prep.model = torch.compile(prep.model, mode=str(value))  # type: ignore[assignment]

    def warmup(self, spec: RunSpec) -> int:
        # Two generations: the first compiles the decode step (and records its CUDA graphs);
        # the second's prefill still ran 1.9-2.5x the later ones' on the H200 (14 runs of
        # llama-1b at batch 1, BENCHMARKS.md batches L and L2), its decode steps not. Whether
        # a compiled forward's CUDA graphs (train, infer) need it too was not measured.
        return 2 if mode_of(spec).decodes and self.active(spec) else 0

    def code(self, spec: RunSpec, device: Device) -> list[str]:
        value = self.value(spec)
        mode = "" if value == "default" else f', mode="{value}"'
        if mode_of(spec).decodes:
            return [
                f"decode = torch.compile(model.forward{mode}, dynamic=False)"
                "  # the decode steps; the prefill runs model(...) eagerly"
            ]
        return [f"model = torch.compile(model{mode})"]

    def variants(self, base: RunSpec, device: Device, workload: Workload) -> list[Variant]:
        if mode_of(base).decodes:
            return []  # the static KV cache's variant compiles it (levers/kv_cache)
        return [Variant("compile", self.assign(base, "default"), self.name)]

    def not_tried(self, group: str, base: RunSpec, device: Device, workload: Workload) -> str:
        if mode_of(base).decodes and group == self.name:
            return "on generate it is tried with the static KV cache (the kv_cache group)"
        return ""

    def pays_with(self, stack: RunSpec) -> str:
        if stack.lever("cuda_graphs", False):
            return (
                "inside a CUDA graph, launches cost nothing and fewer, fused kernels shorten the "
                "device's own time"
            )
        return ""

    def alternatives(self, spec: RunSpec, device: Device, workload: Workload) -> list[Variant]:
        """The other modes, on a stack that compile paid on: each compiles again (minutes for a
        large model), so they are tried last. reduce-overhead captures CUDA graphs itself, so it
        replaces a stack's own graph; max-autotune (with graphs) would too, and tunes longest."""
        if device.kind != "cuda":
            return []  # the modes differ by CUDA graphs and GPU kernel autotuning
        graphless = spec.with_lever("cuda_graphs", False, False)
        return [
            v
            for v in self._modes(spec, graphless)
            if v.spec != spec  # the stack's own mode (a static cache's variant has graphs)
        ]

    def _modes(self, spec: RunSpec, graphless: RunSpec) -> list[Variant]:
        return [
            Variant(
                "compile:reduce-overhead", self.assign(graphless, "reduce-overhead"), self.name
            ),
            Variant(
                "compile:max-autotune-no-cudagraphs",
                self.assign(spec, "max-autotune-no-cudagraphs"),
                "autotune",
                cost=AUTOTUNE_COST,
                costly="max-autotune searches kernels for minutes",
            ),
        ]
