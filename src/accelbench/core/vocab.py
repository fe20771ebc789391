"""Names shared by the library and the command line that import neither torch nor numpy: the
backends a run can ask for, and the workload measured when none is named."""

from __future__ import annotations

__all__ = ["BACKENDS", "DEFAULT_WORKLOAD", "ONNXRUNTIME", "ORT_PROVIDERS", "TORCH"]

TORCH = "torch"
# "onnxruntime" means every execution provider of the device; a provider can be named alone.
ONNXRUNTIME = "onnxruntime"
ORT_PROVIDERS = ("cpu", "cuda", "tensorrt", "rocm", "migraphx", "coreml", "openvino")
BACKENDS = (TORCH, ONNXRUNTIME, *(f"{ONNXRUNTIME}-{p}" for p in ORT_PROVIDERS))

DEFAULT_WORKLOAD = "seed-cnn"  # seed 000's benchmark, what `run` measures with no arguments
