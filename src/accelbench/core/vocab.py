"""The vocabularies the library and the command line share (precisions, statuses, backends,
export targets; the modes are a registry, core/modes), the mode and the workload measured
when none is named; they import neither torch nor numpy, so `accelbench --help` can offer
them and stay instant."""

from __future__ import annotations

__all__ = [
    "BACKENDS",
    "COREML",
    "DEFAULT_MODE",
    "DEFAULT_WORKLOAD",
    "EXPORT_TARGETS",
    "ONNXRUNTIME",
    "ORT_PROVIDERS",
    "PRECISIONS",
    "STATUSES",
    "TORCH",
]

PRECISIONS = ("fp32", "tf32", "fp16", "bf16", "int8")  # int8: ONNX Runtime's quantization
STATUSES = ("ok", "oom", "error", "timeout", "unsupported")

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

EXPORT_TARGETS = ("onnx", "coreml")  # what `accelbench export --to` writes (accelbench.exporters)

DEFAULT_MODE = "train"  # what `run` measures when no mode is named
DEFAULT_WORKLOAD = "seed-cnn"  # seed 000's benchmark, what `run` measures with no arguments
