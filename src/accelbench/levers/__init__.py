"""Optimization steps: one small object per lever, applied in registration order.

Each step says whether a RunSpec asks for it, why a device, mode or workload cannot take it
(stored as an "unsupported" result, never silently dropped), and how to apply it: to the model
before the step function is built, or to the step function itself.
"""

from __future__ import annotations

import importlib

from .base import Prepared, Step, active_steps, register, unsupported_reason

__all__ = ["Prepared", "Step", "active_steps", "register", "unsupported_reason"]


def _load() -> None:
    # Registration order is application order: pruning first, on the plain fp32 model (it
    # traces the model and replaces its layers); the layout before DDP wraps the model, DDP
    # before compile (PyTorch compiles the DDP module), graphs last, around the built step.
    for module in ("threads", "prune", "precision", "layout", "parallel", "compile", "graphs"):
        importlib.import_module(f".{module}", __name__)  # each registers its step


_load()
