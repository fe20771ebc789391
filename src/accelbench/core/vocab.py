"""The vocabularies the library and the command line share (precisions, statuses, backends,
export targets; the modes are a registry, core/modes), the mode and the workload measured
when none is named; they import neither torch nor numpy, so `accelbench --help` can offer
them and stay instant."""

from __future__ import annotations

from typing import Literal, get_args

__all__ = [
    "BACKENDS",
    "CALIBRATED_PRECISIONS",
    "COMPUTE_UNITS",
    "COREML",
    "DEFAULT_MODE",
    "DEFAULT_WORKLOAD",
    "EXPORT_PRECISIONS",
    "EXPORT_TARGETS",
    "ComputeUnits",
    "ExportPrecision",
    "ExportTarget",
    "ONNXRUNTIME",
    "ORT_PROVIDERS",
    "PRECISIONS",
    "STATUSES",
    "TORCH",
    "Precision",
    "Status",
]

# Each closed vocabulary is written once, as its Literal type; the tuple the parsers and
# messages list is derived from it. Modes and backends are open registries, so they stay text.

Precision = Literal["fp32", "tf32", "fp16", "bf16", "int8"]  # int8: ONNX Runtime's quantization
PRECISIONS: tuple[Precision, ...] = get_args(Precision)
Status = Literal["ok", "oom", "error", "timeout", "unsupported"]
STATUSES: tuple[Status, ...] = get_args(Status)
# what `accelbench calibrate` times a matrix product in (int8 is ONNX Runtime's, not a product's)
CALIBRATED_PRECISIONS: tuple[Precision, ...] = ("fp32", "tf32", "fp16", "bf16")

TORCH = "torch"
# "onnxruntime" means every execution provider of the device; a provider can be named alone.
ONNXRUNTIME = "onnxruntime"
ORT_PROVIDERS = ("cpu", "cuda", "tensorrt", "rocm", "migraphx", "coreml", "openvino")
# "coreml" means every compute-unit setting (macOS); a setting can be named alone.
COREML = "coreml"
COREML_UNITS = ("all", "cpu-and-ne", "cpu-and-gpu", "cpu-only")
BACKENDS = (
    TORCH,
    ONNXRUNTIME,
    *(f"{ONNXRUNTIME}-{p}" for p in ORT_PROVIDERS),
    COREML,
    *(f"{COREML}-{u}" for u in COREML_UNITS),
)

ExportTarget = Literal["onnx", "coreml"]  # what `accelbench export --to` writes (exporters/)
EXPORT_TARGETS: tuple[ExportTarget, ...] = get_args(ExportTarget)
ExportPrecision = Literal["fp32", "fp16"]  # what an exported model computes in
EXPORT_PRECISIONS: tuple[ExportPrecision, ...] = get_args(ExportPrecision)
ComputeUnits = Literal["ALL", "CPU_AND_NE", "CPU_AND_GPU", "CPU_ONLY"]  # Core ML's, at export
COMPUTE_UNITS: tuple[ComputeUnits, ...] = get_args(ComputeUnits)

DEFAULT_MODE = "train"  # what `run` measures when no mode is named
DEFAULT_WORKLOAD = "seed-cnn"  # seed 000's benchmark, what `run` measures with no arguments
