"""The optimization ladder: every lever that applies, alone and in the combinations that make
sense, measured by the benchmark engine against fp32 eager, each with its drift from the fp32
model; then the fastest variant whose drift stays within the tolerance.

Each variant is an ordinary configuration (a RunSpec) run in its own worker, so a variant that
crashes, runs out of memory or cannot apply ends as that row's status and the ladder goes on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..analysis.compare import Speedup, speedup
from ..backends.onnxruntime import INT8_PROVIDERS, backend_name, provider_of
from ..core.result import Result, RunSpec
from ..devices import Device

__all__ = [
    "LEVERS",
    "Rung",
    "Tolerance",
    "Verdict",
    "assess",
    "ladder",
    "levers_not_tried",
    "recommend",
    "settings_code",
]

# The levers a user can restrict the ladder to with --levers.
LEVERS = ("precision", "channels_last", "compile", "cuda_graphs", "int8", "pruning")
PRUNING = ("unstructured:0.5", "channels:0.3")
INFERENCE = (
    "int8",
    "pruning",
)  # levers for inference only  # amounts: a common first try, not a tuned one
BASELINE = "fp32 eager"


@dataclass(frozen=True)
class Tolerance:
    """How far a variant's outputs may stray from the fp32 model's."""

    max_rel_error: float = 0.05
    min_top1: float = 0.95  # share of samples whose top-1 class must agree (classifiers)

    def breach(self, drift: dict[str, Any] | None) -> str | None:
        """Why this drift is out of bounds, or None when it is within them."""
        if not drift or "error" in drift:
            return f"its drift could not be measured ({(drift or {}).get('error', 'no figure')})"
        if drift.get("not_finite"):
            return "its outputs hold NaN or infinity"
        if drift["max_rel_error"] > self.max_rel_error:
            return (
                f"max relative error {drift['max_rel_error']:.2g} exceeds the tolerance "
                f"{self.max_rel_error:g}"
            )
        top1 = drift.get("top1_agreement")
        if top1 is not None and top1 < self.min_top1:
            return f"top-1 agreement {top1:.1%} is below {self.min_top1:.0%}"
        return None


@dataclass(frozen=True)
class Rung:
    """One variant of the ladder: a name a person reads and the configuration it runs."""

    name: str
    spec: RunSpec


def ladder(base: RunSpec, device: Device, images: bool, levers: Sequence[str]) -> list[Rung]:
    """fp32 eager first, then each lever alone, then the stacks that make sense: the fastest
    precision with channels_last, then with torch.compile or a CUDA graph on top."""
    low = _low_precisions(device) if "precision" in levers else []
    layout = images and "channels_last" in levers
    rungs = [Rung(BASELINE, base)]
    rungs += [Rung(p, replace(base, precision=p)) for p in low]
    if layout:
        rungs.append(Rung("channels_last", replace(base, channels_last=True)))
    if "compile" in levers:
        rungs.append(Rung("compile", replace(base, compile="default")))
    if "cuda_graphs" in levers and device.can_capture_graphs:
        rungs.append(Rung("cuda_graphs", replace(base, cuda_graphs=True)))
    stack, name = base, ""
    if low:  # bf16 where the device has it: it keeps fp32's range
        best = "bf16" if "bf16" in low else low[-1]
        stack, name = replace(base, precision=best), best
    if layout and name:
        stack, name = replace(stack, channels_last=True), f"{name} + channels_last"
    if " + " in name:
        rungs.append(Rung(name, stack))
    if name and "compile" in levers:
        rungs.append(Rung(f"{name} + compile", replace(stack, compile="default")))
    if name and "cuda_graphs" in levers and device.can_capture_graphs:
        rungs.append(Rung(f"{name} + cuda_graphs", replace(stack, cuda_graphs=True)))
    if base.mode == "infer":
        rungs += _inference_rungs(base, device, levers)
    return list({r.spec: r for r in rungs}.values())  # a stack equal to a single lever once


def levers_not_tried(
    base: RunSpec, device: Device, images: bool, levers: Sequence[str]
) -> dict[str, str]:
    """Each lever asked for that the ladder leaves out here, with the reason."""
    reasons = {
        "precision": None if _low_precisions(device) else f"{device.name} runs fp32 only",
        "channels_last": None if images else "the inputs are not images",
        "cuda_graphs": None
        if device.can_capture_graphs
        else f"{device.name} cannot capture graphs",
        "compile": None,
    }
    inference_only = f"an inference lever; the ladder is for {base.mode}"
    reasons |= {lever: None if base.mode == "infer" else inference_only for lever in INFERENCE}
    return {lever: why for lever in levers if (why := reasons.get(lever))}


def _low_precisions(device: Device) -> list[str]:
    return [p for p in ("tf32", "fp16", "bf16") if p in device.dtypes.names()]


def _inference_rungs(base: RunSpec, device: Device, levers: Sequence[str]) -> list[Rung]:
    rungs = []
    if "int8" in levers:
        # ONNX Runtime quantizes; a provider of the device with int8 kernels runs it (TensorRT
        # on NVIDIA), else its first provider, which says why it cannot.
        providers = device.onnxruntime_providers
        int8 = [p for p in providers if p in INT8_PROVIDERS] or list(providers) or ["none"]
        backend = backend_name(int8[0])
        rungs.append(Rung(f"int8 ({backend})", replace(base, precision="int8", backend=backend)))
    if "pruning" in levers:
        rungs += [Rung(f"pruned {p}", replace(base, pruning=p)) for p in PRUNING]
    return rungs


@dataclass(frozen=True)
class Verdict:
    """One rung measured: its speedup over fp32 eager, whether its drift is allowed, and what a
    person should know about it."""

    rung: Rung
    result: Result
    speedup: Speedup | None
    refused: str | None  # why the recommendation may not take it
    note: str
    baseline: bool = False  # fp32 eager itself, which every speedup is against

    def to_dict(self) -> dict[str, Any]:
        drift = self.result.metrics.get("drift")
        return {
            "variant": self.rung.name,
            "spec": self.result.spec.label,
            "status": self.result.status,
            "error": self.result.error,
            "samples_per_s": self.result.samples_per_second,
            "speedup": self.speedup.to_dict() if self.speedup else None,
            "peak_memory": self.result.peak_memory,
            "drift": drift,
            "refused": self.refused,
            "note": self.note,
        }


def assess(rungs: Sequence[Rung], results: Sequence[Result], tolerance: Tolerance) -> list[Verdict]:
    """Each rung against the first (fp32 eager)."""
    base = results[0]
    launch_bound = _launch_bound(base)
    out = []
    for rung, result in zip(rungs, results, strict=True):
        if result.measurement is None:
            out.append(Verdict(rung, result, None, result.error or result.status, ""))
        elif result is base:
            out.append(Verdict(rung, result, None, None, "", baseline=True))
        else:
            ratio = speedup(result, base) if base.measurement else None
            refused = tolerance.breach(result.metrics.get("drift"))
            out.append(Verdict(rung, result, ratio, refused, _note(rung, ratio, launch_bound)))
    return out


def recommend(verdicts: Sequence[Verdict]) -> Verdict:
    """The fastest variant within tolerance whose gain is real (its interval clears 1);
    fp32 eager when none is."""
    paying = [v for v in verdicts[1:] if v.speedup and v.refused is None and v.speedup.low > 1.0]
    if not paying:
        return verdicts[0]
    return max(paying, key=lambda v: v.speedup.ratio if v.speedup else 0.0)


def _launch_bound(base: Result) -> bool:
    verdict = base.metrics.get("verdict") or {}
    return verdict.get("kind") == "launch-bound"


def _note(rung: Rung, ratio: Speedup | None, launch_bound: bool) -> str:
    """Say plainly when a lever does not pay, and why when the reason is known."""
    if ratio is None or (ratio.significant and ratio.low > 1.0):
        return ""
    text = (
        f"does not pay here ({ratio.text()})"
        if not ratio.significant
        else f"slower ({ratio.text()})"
    )
    spec = rung.spec
    if spec.pruning.startswith("unstructured"):
        text += ": zeroed weights leave dense kernels the same work; only sparse kernels gain"
    elif launch_bound and spec.precision in ("tf32", "fp16", "bf16") and not spec.compile:
        text += (
            ": the step is launch-bound, and a lower precision shortens kernels, not the "
            "host's launches"
        )
    return text


def settings_code(spec: RunSpec, device: Device) -> list[str]:
    """The lines that apply this variant's settings in one's own PyTorch code."""
    kind = device.torch_device.type
    if spec.backend != "torch":
        return _onnxruntime_code(spec, device)
    lines = []
    if spec.pruning:
        lines += _pruning_code(spec.pruning)
    if spec.precision == "tf32":
        lines += [
            "torch.backends.cuda.matmul.allow_tf32 = True",
            "torch.backends.cudnn.allow_tf32 = True",
        ]
    if spec.channels_last:
        lines += [
            "model = model.to(memory_format=torch.channels_last)",
            "inputs = inputs.to(memory_format=torch.channels_last)",
        ]
    if spec.compile:
        mode = "" if spec.compile == "default" else f', mode="{spec.compile}"'
        lines.append(f"model = torch.compile(model{mode})")
    if spec.precision in ("fp16", "bf16"):
        dtype = "torch.bfloat16" if spec.precision == "bf16" else "torch.float16"
        lines.append(f'with torch.autocast("{kind}", dtype={dtype}):  # around the forward pass')
        if spec.precision == "fp16" and spec.mode == "train":
            lines.append(f'scaler = torch.amp.GradScaler("{kind}")  # scale the loss, as usual')
    if spec.cuda_graphs:
        lines.append(
            "# capture the whole step in a CUDA graph: static inputs, then "
            "torch.cuda.graph(g) around one step and g.replay() for each later one"
        )
    return lines or ["# nothing to change: fp32 eager is the fastest within tolerance"]


def _onnxruntime_code(spec: RunSpec, device: Device) -> list[str]:
    provider = provider_of(spec.backend, device)
    lines = ['torch.onnx.export(model.eval(), (example,), "model.onnx", dynamo=True)']
    path = "model.onnx"
    if spec.precision == "int8":
        signed = provider != "CPUExecutionProvider"  # as accelbench quantized it
        activations = "QuantType.QInt8" if signed else "QuantType.QUInt8"
        symmetric = (
            ', extra_options={"ActivationSymmetric": True, "WeightSymmetric": True}'
            if signed
            else ""
        )
        lines += [
            "from onnxruntime.quantization import QuantFormat, QuantType, quantize_static",
            "from onnxruntime.quantization.shape_inference import quant_pre_process",
            'quant_pre_process("model.onnx", "model.pre.onnx")',
            'quantize_static("model.pre.onnx", "model.int8.onnx", calibration_reader,  '
            "# a CalibrationDataReader over real inputs",
            f"    quant_format=QuantFormat.QDQ, per_channel=True, weight_type=QuantType.QInt8, "
            f"activation_type={activations}{symmetric})",
        ]
        path = "model.int8.onnx"
    lines.append(f'session = onnxruntime.InferenceSession("{path}", providers=["{provider}"])')
    return lines


def _pruning_code(pruning: str) -> list[str]:
    """What steps/prune.py does, in a user's terms."""
    kind, amount = pruning.split(":")
    if kind == "unstructured":
        return [
            "import torch.nn.utils.prune as prune",
            "for m in model.modules():  # each layer on its own: its smallest weights zeroed",
            "    if isinstance(m, (nn.Conv2d, nn.Linear)):",
            f'        prune.l1_unstructured(m, "weight", amount={amount})',
            '        prune.remove(m, "weight")',
        ]
    return [
        "import torch_pruning as tp  # removes whole channels, so the model really shrinks",
        "convs = [m for m in model.modules() if isinstance(m, nn.Conv2d)]",
        "pruner = tp.pruner.BasePruner(model, example, importance=tp.importance."
        f"MagnitudeImportance(p=1), pruning_ratio={amount}, root_module_types=[nn.Conv2d], "
        "ignored_layers=[last_layer])  # keep the outputs (a classifier's classes)",
        "pruner.step()",
        "# then fine-tune: accelbench measures the pruned model untrained",
    ]
