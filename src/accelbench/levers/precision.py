"""Precision: fp32 (TF32 off), tf32 (TensorFloat-32 matmuls and convolutions), fp16 and bf16
through autocast, with a GradScaler for fp16 training; int8 through ONNX Runtime's quantization.

Its value is `RunSpec.precision`, a field of its own (every backend reads it), not an entry of
`RunSpec.levers`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, cast

from ..core import vocab
from ..core.modes import mode_of
from ..core.result import PRECISIONS, RunSpec, Value
from .base import Lever, Prepared, Variant, not_forward_only, register

if TYPE_CHECKING:
    from ..devices import Device
    from ..workloads import Workload

LOW = ("tf32", "fp16", "bf16")  # what the ladder tries against fp32, where the device runs it
# An emulated precision (fp16 on a CPU without fp16 instructions) ran 14x slower than fp32 for
# gpt2 generation on a 2-core EPYC, 30 s a generation against 2.1 s (BENCHMARKS.md): the search
# tries it last, where its budget still holds ten times the baseline's wall time.
EMULATED_COST = 10.0
_AUTOCAST = {"fp16": "float16", "bf16": "bfloat16"}


def low_precisions(device: Device) -> list[str]:
    return [p for p in LOW if p in device.dtypes.names()]


@register
class Precision(Lever):
    name = "precision"
    option = "--precisions"
    single_option = "--precision"
    help = (
        "fp32 (TF32 off), tf32, fp16, bf16; int8 (ONNX Runtime's static quantization, "
        "with --backends onnxruntime) (default: fp32)"
    )
    dimension = "precision"
    default = "fp32"
    words = PRECISIONS
    stage = 20
    torch_only = False
    searched = True
    generates = True
    relieves = ("memory bandwidth", "compute")  # half the bytes; the tensor cores

    def value(self, spec: RunSpec) -> Value:
        return spec.precision

    def assign(self, spec: RunSpec, value: Value) -> RunSpec:
        return replace(spec, precision=cast(vocab.Precision, str(value)))  # RunSpec checks the word

    def active(self, spec: RunSpec) -> bool:
        return True  # every run has a precision; fp32 pins the TF32 switches off

    def label(self, value: Value) -> str:
        return ""  # the precision heads every label ("train fp32 b64"): see levers.label

    def unsupported(self, spec: RunSpec, device: Device, workload: Workload) -> str | None:
        if spec.precision == "int8":
            return "int8 goes through ONNX Runtime's quantization: add --backends onnxruntime"
        # The device says the real cause (bf16 on MPS before macOS 14, say).
        return device.dtype_unsupported(spec.precision) or None

    def apply_model(self, prep: Prepared, value: Value) -> None:
        import torch

        from ..devices import set_tf32

        # PyTorch's defaults differ (cuDNN TF32 on, matmul TF32 off); make "fp32" mean fp32.
        set_tf32(value == "tf32")
        dtype = _AUTOCAST.get(str(value))
        if dtype and mode_of(prep.spec).decodes:
            # A decoder is served in its dtype: cast the weights (and so the KV cache) once.
            # Autocast would re-cast fp32 weights at every decode step, reading them twice.
            prep.model = prep.model.to(getattr(torch, dtype))
            return
        prep.autocast_dtype = getattr(torch, dtype) if dtype else None
        if value == "fp16" and mode_of(prep.spec).trains:
            # fp16 gradients underflow without loss scaling; the scaler's inf check syncs.
            prep.scaler = torch.amp.GradScaler(prep.device.autocast_type)

    def code(self, spec: RunSpec, device: Device) -> list[str]:
        if spec.precision == "tf32":
            return [
                "torch.backends.cuda.matmul.allow_tf32 = True",
                "torch.backends.cudnn.allow_tf32 = True",
            ]
        if spec.precision not in _AUTOCAST:
            return []
        kind = device.autocast_type
        dtype = f"torch.{_AUTOCAST[spec.precision]}"
        if mode_of(spec).decodes:
            return [f"model = model.to({dtype})  # weights and KV cache in {spec.precision}"]
        lines = [f'with torch.autocast("{kind}", dtype={dtype}):  # around the forward pass']
        if spec.precision == "fp16" and mode_of(spec).trains:
            lines.append(f'scaler = torch.amp.GradScaler("{kind}")  # scale the loss, as usual')
        return lines

    def no_gain_reason(self, spec: RunSpec, launch_bound: bool) -> str:
        if launch_bound and spec.precision in LOW and not spec.lever("compile", ""):
            return (
                "the step is launch-bound, and a lower precision shortens kernels, not the "
                "host's launches"
            )
        return ""

    # --- the search: each low precision alone, the best of them stacked. A backend switch
    # (ONNX Runtime fp32; Core ML on the Mac) and int8 on it, judged against that switch, are
    # the backends' variants (PyTorch runs no int8 kernels here), named here so that
    # `optimize --levers` lists them without importing the backends.
    @property
    def ladder_groups(self) -> tuple[str, ...]:
        return ("precision", "backend", "int8")

    def variants(self, base: RunSpec, device: Device, workload: Workload) -> list[Variant]:
        # The 16-bit precisions first, bf16 (training's preference) leading: they halve the
        # bytes as well as using the tensor cores, where tf32 only speeds fp32 matmuls; a search
        # whose budget ends after one trial (llama-1b decoding on the H200 ended after tf32's
        # 1.23x, n.s.) has then tried the likelier.
        ordered = sorted(low_precisions(device), key=lambda p: (p == "tf32", p != "bf16"))
        return [self._variant(base, p, device) for p in ordered]

    def _variant(self, spec: RunSpec, precision: str, device: Device) -> Variant:
        variant = Variant(precision, self.assign(spec, precision), "precision")
        if precision not in device.dtypes.emulated:
            return variant
        why = f"{device.name} has no {precision} instructions: PyTorch emulates it, slowly"
        return replace(variant, cost=EMULATED_COST, costly=why)

    def alternatives(self, spec: RunSpec, device: Device, workload: Workload) -> list[Variant]:
        """The other low precisions on a finished stack: alone fp16 can beat bf16 and lose
        to it once compiled (resnet50 on an H200: fp16's GradScaler checks the host each step)."""
        others = [p for p in low_precisions(device) if p != spec.precision]
        return [self._variant(spec, p, device) for p in others]

    def pays_with(self, stack: RunSpec) -> str:
        if stack.lever("cuda_graphs", False) or stack.lever("compile", "") == "reduce-overhead":
            return (
                "with the launches captured in a graph, kernel time is what is left, and a lower "
                "precision shortens kernels"
            )
        return ""

    def preferred(self, spec: RunSpec) -> str:
        # Alone fp16 trained resnet50 on the H200 faster than bf16 (2,980 against 2,445 img/s),
        # compiled bf16 won (7,155 against 6,534; BENCHMARKS.md), and the search compiles last.
        if spec.precision == "bf16" and mode_of(spec).trains:
            return (
                "in training bf16 needs no GradScaler (fp16's checks the host each step), and "
                "compiled it trained resnet50 faster than fp16 on the H200, where eager fp16 led"
            )
        return ""

    def not_tried(self, group: str, base: RunSpec, device: Device, workload: Workload) -> str:
        if group in ("backend", "int8"):
            inference = mode_of(base).forward_only
            return "" if inference else f"{not_forward_only(base)}; the search is for {base.mode}"
        return "" if low_precisions(device) else f"{device.name} runs fp32 only"
