"""ONNX Runtime as a benchmark backend.

The workload is exported to ONNX as `accelbench export` does it (fixed batch), quantized to int8
by onnxruntime.quantization when asked, and run by one execution provider; the benchmark engine
times it like a PyTorch step. Each provider is a backend of its own ("onnxruntime-cpu",
"onnxruntime-cuda", "onnxruntime-tensorrt"...), so each is a row of its own.

`session.run` takes and returns host arrays, so it returns only when the outputs are back on the
host: the host clock times it truly, and on an accelerator the time includes copying the inputs
in and the outputs out (a PyTorch step's time does not; the result says so).
"""

from __future__ import annotations

import contextlib
import io
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..analysis.facts import ONNXRUNTIME
from ..core.modes import mode_of
from ..core.result import RunSpec
from ..core.vocab import ONNXRUNTIME as BACKEND  # it expands to one backend per provider
from ..devices import Device, HostTimer, MemoryReading, Timer
from ..errors import require
from ..exporters.common import several_inputs_refusal
from ..levers import Variant, active_levers, find_lever
from ..workloads import Workload
from .base import Backend, Runnable, register

__all__ = [
    "BACKEND",
    "OnnxRuntime",
    "OrtPrepared",
    "backend_name",
    "build_session",
    "require_onnxruntime",
    "unsupported",
]

PREFIX = f"{BACKEND}-"
CALIBRATION_BATCHES = 4  # random batches that set int8 activation ranges
# Providers whose int8 (QDQ) kernels run on the device; the others hand them back to the CPU.
INT8_PROVIDERS = ("CPUExecutionProvider", "TensorrtExecutionProvider", "OpenVINOExecutionProvider")
TF32_PROVIDERS = ("CUDAExecutionProvider",)  # ORT's CUDA provider has a use_tf32 switch
GPU_PROVIDERS = (  # providers that take a device_id
    "CUDAExecutionProvider",
    "TensorrtExecutionProvider",
    "ROCMExecutionProvider",
    "MIGraphXExecutionProvider",
)


def backend_name(provider: str) -> str:
    """'CUDAExecutionProvider' -> 'onnxruntime-cuda'."""
    return PREFIX + provider.removesuffix("ExecutionProvider").lower()


def provider_of(backend: str, device: Device) -> str | None:
    """The execution provider a backend name stands for on `device`, or None."""
    for provider in device.onnxruntime_providers:
        if backend_name(provider) == backend:
            return provider
    return None


def require_onnxruntime() -> Any:
    """onnxruntime, or one line saying how to install it."""
    return require("onnxruntime", "export", "ONNX Runtime")


def unsupported(spec: RunSpec, device: Device) -> str | None:
    """Why ONNX Runtime cannot run this configuration here, or None."""
    provider = provider_of(spec.backend, device)
    if provider is None:
        names = [backend_name(p) for p in device.onnxruntime_providers] or ["none"]
        return f"{device.name} takes ONNX Runtime backends {', '.join(names)}, not {spec.backend}"
    if not mode_of(spec).forward_only:
        return (
            f"ONNX Runtime is benchmarked for inference; mode {spec.mode} runs on the torch backend"
        )
    for lever in active_levers(spec):
        if lever.torch_only:
            return (
                f"{lever.title} is a PyTorch option; ONNX Runtime applies its own graph "
                "optimizations"
            )
    reason = _precision_reason(spec.precision, provider)
    if reason:
        return reason
    available = require_onnxruntime().get_available_providers()
    if provider not in available:
        hint = " (pip install onnxruntime-gpu)" if provider in TF32_PROVIDERS else ""
        return f"this onnxruntime has no {provider}{hint}; it has {', '.join(available)}"
    return None


def _precision_reason(precision: str, provider: str) -> str | None:
    if precision == "tf32" and provider not in TF32_PROVIDERS:
        return f"tf32 is a switch of ONNX Runtime's CUDA provider, not of {provider}"
    if precision == "bf16":
        return "accelbench exports fp32, fp16 or int8 models for ONNX Runtime, not bf16"
    if precision == "int8" and provider not in INT8_PROVIDERS:
        return f"{provider} hands int8 (QDQ) operators back to the CPU; int8 runs on CPU here"
    return None


@dataclass
class OrtPrepared:
    """A session ready to time: what `block_function` and the runner need from a backend."""

    spec: RunSpec
    step: Callable[[], None]
    outputs: Callable[[], torch.Tensor]  # the outputs on the benchmark's batch, on the CPU
    device: Device
    info: dict[str, Any] = field(default_factory=dict)  # lands in the Result's metrics

    def timer(self) -> Timer:
        return HostTimer(lambda: None)  # session.run returns with its outputs on the host

    def peak_memory(self) -> MemoryReading:
        if self.device.is_host:  # the process's RSS holds the session's memory
            reading = self.device.peak_memory()
            return replace(reading, meaning=f"{reading.meaning}, from the session's creation on")
        return MemoryReading(None, "not measured: ONNX Runtime allocates outside PyTorch")


def build_session(spec: RunSpec, workload: Workload, device: Device) -> OrtPrepared:
    """Export `workload` at the spec's batch, quantize for int8, open a session on the provider."""
    ort = require_onnxruntime()
    from ..exporters.common import exportable

    provider = provider_of(spec.backend, device)
    assert provider is not None, unsupported(spec, device)
    precision = "fp16" if spec.precision == "fp16" else "fp32"  # int8 is quantized from fp32
    exported = exportable(workload, precision, spec.batch_size, dynamic_batch=False)
    with tempfile.TemporaryDirectory(prefix="accelbench-ort-") as scratch:
        path, exporter = _onnx_file(exported, Path(scratch), spec.precision, provider)
        # No silent fallback: ONNX Runtime would otherwise rebuild a failed session (or a failed
        # run) on another provider, and the row would name a provider that did not run it.
        session = ort.InferenceSession(
            str(path),
            _session_options(ort, spec),
            providers=_providers(provider, spec, device.index),
            enable_fallback=0,
        )
    if session.get_providers()[0] != provider:
        raise RuntimeError(
            f"ONNX Runtime did not start {provider} (it runs on {session.get_providers()})"
        )
    feed = {session.get_inputs()[0].name: exported.example.numpy()}
    # Export and calibration are one-off costs of many GB (int8 calibration keeps activations):
    # the peak that matters is the session's.
    del exported
    device.reset_peak_memory()
    facts = {
        "onnxruntime": ort.__version__,
        "exporter": exporter,
        "providers": session.get_providers(),  # the provider asked for, then its fallbacks
        "timing": "session.run on host arrays: host-device copies of inputs and outputs included"
        if not device.is_host
        else "session.run on host arrays",
    }
    if provider == "TensorrtExecutionProvider":
        facts["caveat"] = "TensorRT may run fp32 layers in TF32 (its builder's default)"

    def step() -> None:
        session.run(None, feed)

    def outputs() -> torch.Tensor:
        return torch.from_numpy(np.asarray(session.run(None, feed)[0])).float()

    return OrtPrepared(spec, step, outputs, device, {ONNXRUNTIME: facts})


def _onnx_file(exported: Any, scratch: Path, precision: str, provider: str) -> tuple[Path, str]:
    """The model file for the session, and which exporter made it (and why, on a fallback)."""
    from ..exporters.onnx import write_onnx  # the exporter `accelbench export` uses

    path = scratch / "model.onnx"
    with contextlib.redirect_stderr(io.StringIO()):  # the exporter's progress lines
        exporter, fallback = write_onnx(exported, path)
    if fallback:
        exporter += f" (the torch.export-based exporter failed: {fallback})"
    if precision == "int8":
        return _quantize(path, exported, symmetric=provider != "CPUExecutionProvider"), exporter
    return path, exporter


def _quantize(path: Path, exported: Any, symmetric: bool) -> Path:
    """Static int8 quantization (QDQ, per-channel weights), ranges set on random batches: the
    workloads' data are random, so the drift reported beside the result is the check.

    The CPU provider's kernels take unsigned activations with a zero point; TensorRT and
    OpenVINO want signed, symmetric int8 (zero point 0) for activations and weights alike.
    """
    from onnxruntime.quantization import (
        CalibrationDataReader,
        QuantFormat,
        QuantType,
        quantize_static,
    )
    from onnxruntime.quantization.shape_inference import quant_pre_process

    # onnxruntime ships no type hints, so mypy sees its base class as Any
    class Batches(CalibrationDataReader):  # type: ignore[misc]
        def __init__(self) -> None:
            from ..exporters.onnx import INPUT

            seeds = range(100, 100 + CALIBRATION_BATCHES)  # not the benchmark's batch (seed 0)
            feeds = [{INPUT: exported.fresh_inputs(seed).numpy()} for seed in seeds]
            self._feeds: Iterator[dict[str, np.ndarray]] = iter(feeds)

        def get_next(self) -> dict[str, np.ndarray] | None:
            return next(self._feeds, None)

    prepared, quantized = path.with_name("pre.onnx"), path.with_name("int8.onnx")
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        quant_pre_process(str(path), str(prepared))
        quantize_static(
            str(prepared),
            str(quantized),
            Batches(),
            quant_format=QuantFormat.QDQ,
            per_channel=True,
            weight_type=QuantType.QInt8,
            activation_type=QuantType.QInt8 if symmetric else QuantType.QUInt8,
            extra_options={"ActivationSymmetric": True, "WeightSymmetric": True}
            if symmetric
            else {},
        )
    return quantized


def _session_options(ort: Any, spec: RunSpec) -> Any:
    options = ort.SessionOptions()
    options.log_severity_level = 3  # errors only: warnings would flood the terminal
    threads = int(find_lever("threads").value(spec))
    if threads:
        options.intra_op_num_threads = threads
    return options


def _providers(provider: str, spec: RunSpec, index: int) -> list[Any]:
    """The providers with their options; GPU providers on the spec's GPU, not GPU 0."""
    gpu = {"device_id": str(index)} if provider in GPU_PROVIDERS else {}
    if provider in TF32_PROVIDERS:
        # ORT's CUDA provider uses TF32 by default; fp32 must mean fp32, as for PyTorch.
        return [(provider, {**gpu, "use_tf32": "1" if spec.precision == "tf32" else "0"})]
    if provider == "TensorrtExecutionProvider":  # TensorRT wants CUDA's provider beside it
        return [(provider, gpu), ("CUDAExecutionProvider", {**gpu, "use_tf32": "0"})]
    return [(provider, gpu)]


@register
class OnnxRuntime(Backend):
    """Inference on the exported model, one backend per execution provider of the device."""

    name = BACKEND
    checks_drift = True  # an export is worth checking: every result carries its drift
    not_profiled = (
        "ONNX Runtime's sessions run outside PyTorch's profiler (ONNX Runtime has its own: "
        "SessionOptions.enable_profiling)"
    )

    def expand(self, device: Device) -> list[str]:
        return [backend_name(p) for p in device.onnxruntime_providers]

    def owns(self, backend: str) -> bool:
        return backend.startswith(PREFIX)

    def check_installed(self) -> None:
        require_onnxruntime()

    def unsupported(self, spec: RunSpec, device: Device, workload: Workload) -> str | None:
        return several_inputs_refusal(workload) or unsupported(spec, device)

    def build(self, spec: RunSpec, workload: Workload, device: Device, seed: int = 0) -> Runnable:
        return build_session(spec, workload, device)

    def code(self, spec: RunSpec, device: Device) -> list[str]:
        return session_code(spec, provider_of(spec.backend, device) or spec.backend)

    def variants(self, base: RunSpec, device: Device, workload: Workload) -> list[Variant]:
        """The switch to ONNX Runtime in fp32, a variant of its own, and int8 on the same
        provider judged against it: the switch's gain (its fused kernels, its thread pool) is
        not int8's. Both alone only: PyTorch's levers do not apply to a session."""
        if not mode_of(base).forward_only:
            return []
        # A provider of the device with int8 kernels runs them (TensorRT on NVIDIA), else its
        # first provider, which says why it cannot.
        providers = device.onnxruntime_providers
        int8 = [p for p in providers if p in INT8_PROVIDERS] or list(providers) or ["none"]
        backend = backend_name(int8[0])
        fp32 = replace(base, precision="fp32", backend=backend)
        quantized = replace(fp32, precision="int8")
        return [
            Variant(f"{backend} fp32", fp32, "backend", late=True),
            Variant(f"{backend} int8", quantized, "int8", late=True, over=fp32),
        ]


def session_code(spec: RunSpec, provider: str) -> list[str]:
    """How to export, quantize (for int8) and open the session as accelbench did."""
    lines = ['torch.onnx.export(model.eval(), (example,), "model.onnx", dynamo=True)']
    path = "model.onnx"
    if spec.precision == "int8":
        lines += _quantize_code(signed=provider != "CPUExecutionProvider")
        path = "model.int8.onnx"
    lines.append(f'session = onnxruntime.InferenceSession("{path}", providers=["{provider}"])')
    return lines


def _quantize_code(signed: bool) -> list[str]:
    activations = "QuantType.QInt8" if signed else "QuantType.QUInt8"
    symmetric = (
        ', extra_options={"ActivationSymmetric": True, "WeightSymmetric": True}' if signed else ""
    )
    return [
        "from onnxruntime.quantization import QuantFormat, QuantType, quantize_static",
        "from onnxruntime.quantization.shape_inference import quant_pre_process",
        'quant_pre_process("model.onnx", "model.pre.onnx")',
        'quantize_static("model.pre.onnx", "model.int8.onnx", calibration_reader,  '
        "# a CalibrationDataReader over real inputs",
        f"    quant_format=QuantFormat.QDQ, per_channel=True, weight_type=QuantType.QInt8, "
        f"activation_type={activations}{symmetric})",
    ]
