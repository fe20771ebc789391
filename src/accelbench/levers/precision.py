"""Precision: fp32 (TF32 off), tf32 (TensorFloat-32 matmuls and convolutions), fp16 and bf16
through autocast, with a GradScaler for fp16 training."""

from __future__ import annotations

import torch

from ..core.result import RunSpec
from ..devices import Device
from ..workloads import Workload
from .base import Prepared, Step, register

_AUTOCAST = {"fp16": torch.float16, "bf16": torch.bfloat16}


def _set_tf32(enabled: bool) -> None:
    # PyTorch's defaults differ (cuDNN TF32 on, matmul TF32 off); make "fp32" mean fp32.
    torch.backends.cuda.matmul.allow_tf32 = enabled
    torch.backends.cudnn.allow_tf32 = enabled


@register
class Precision(Step):
    name = "precision"

    def wanted(self, spec: RunSpec) -> bool:
        return True  # every run has a precision; fp32 pins the TF32 switches off

    def unsupported(self, spec: RunSpec, device: Device, workload: Workload) -> str | None:
        if spec.precision == "int8":
            return "int8 goes through ONNX Runtime's quantization: add --backends onnxruntime"
        runs = device.dtypes.names()
        if spec.precision not in runs:
            return f"{device.name} does not run {spec.precision} (it runs {', '.join(runs)})"
        return None

    def apply_model(self, prep: Prepared) -> None:
        precision = prep.spec.precision
        _set_tf32(precision == "tf32")
        prep.autocast_dtype = _AUTOCAST.get(precision)
        if precision == "fp16" and prep.spec.mode == "train":
            # fp16 gradients underflow without loss scaling; the scaler's inf check syncs.
            prep.scaler = torch.amp.GradScaler(prep.device.torch_device.type)
