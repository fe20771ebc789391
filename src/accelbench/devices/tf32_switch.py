"""The TensorFloat-32 switches: whether float32 matrix products and convolutions may use TF32.

PyTorch's defaults differ (cuDNN's convolutions allow TF32, matmuls do not), so "fp32" means
fp32 only once both are off. The switches live under torch.backends.cuda and .cudnn but are
process-wide flags, harmless to set where there is no GPU. TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1
(set in NVIDIA's containers) forces TF32 in cuBLAS whatever they say.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

import torch

__all__ = ["TF32_OVERRIDE", "set_tf32", "tf32", "tf32_forced"]

TF32_OVERRIDE = "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE"


def set_tf32(enabled: bool) -> None:
    """Allow (or forbid) TF32 for float32 matmuls and convolutions, for the rest of the process."""
    torch.backends.cuda.matmul.allow_tf32 = enabled
    torch.backends.cudnn.allow_tf32 = enabled


@contextmanager
def tf32(enabled: bool) -> Iterator[None]:
    """Allow or forbid TF32 inside the block, then restore the caller's settings.

    Forbidding it matters as much as allowing it: with TF32 left on by the caller, an "fp32"
    product would run on TF32 tensor cores.
    """
    before = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    set_tf32(enabled)
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = before


def tf32_forced() -> bool:
    """Whether the environment forces TF32 in cuBLAS, so that float32 products run as TF32."""
    return os.environ.get(TF32_OVERRIDE) == "1"
