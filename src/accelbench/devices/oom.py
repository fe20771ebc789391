"""What running out of device memory raises, so callers can tell it from other failures.

torch.OutOfMemoryError (PyTorch 2.5 and later) covers every device's allocator; older releases
had CUDA's only. The CPU allocator raises a plain RuntimeError instead, which only its message
gives away (`cpu.cpu_allocator_ran_out`); `kinds.mentions_out_of_memory` reads a stored
message, without torch.
"""

from __future__ import annotations

import torch

from .cpu import cpu_allocator_ran_out

__all__ = ["OUT_OF_MEMORY", "is_out_of_memory"]

OUT_OF_MEMORY: tuple[type[BaseException], ...] = (
    getattr(torch, "OutOfMemoryError", torch.cuda.OutOfMemoryError),
)


def is_out_of_memory(exc: BaseException) -> bool:
    """Whether `exc` is a device allocator's out-of-memory error, the CPU's included."""
    return isinstance(exc, OUT_OF_MEMORY) or cpu_allocator_ran_out(exc)
