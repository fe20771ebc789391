"""A workload's model built once per optimization search, and loaded in each trial's process.

A search runs every variant in a fresh worker, and each built its model again: a minute a
process for llama-1b's random initialization (issue 39). Where the search names a folder
(WEIGHTS_DIR, in the workers' environment), the first process whose build takes SAVE_AFTER_S
or more saves the whole module there with the global RNG state after building; later ones load
it and set that state, so the weights and every draw after them are the ones a build with the
same seed gives. Anything that goes wrong (a model that does not pickle, a damaged or partly
written file) falls back to building: a saved model only ever saves time.

Loading runs no initialization (the whole module is unpickled, not built and then filled), and
maps the file rather than reading it (`mmap=True`): the weights are copied once, where they
are used (to the GPU, or page by page on the CPU), not first into the process's own memory.
On the 2-core CPU llama-1b's 4.9 GB loaded and summed in about 2 s so, against 8-10 s read
(BENCHMARKS.md, issue 39). The mapping is private: a process that trains its copy writes to
its own pages, never to the file the next process loads.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

if TYPE_CHECKING:
    from torch import nn

    from .base import Workload

__all__ = ["SAVE_AFTER_S", "WEIGHTS_DIR", "build_seeded"]

WEIGHTS_DIR = "ACCELBENCH_WEIGHTS_DIR"
# A build quicker than this (resnet50's random init, about a second) is not worth the disk.
SAVE_AFTER_S = 2.0


def build_seeded(workload: Workload, seed: int) -> nn.Module:
    """`workload.build_model()` after `torch.manual_seed(seed)`, or the one saved in this
    search's folder (the same weights, the same RNG state after it)."""
    torch.manual_seed(seed)
    folder = os.environ.get(WEIGHTS_DIR)
    path = Path(folder) / _file_name(workload.name, seed) if folder else None
    if path is not None and path.exists():
        loaded = _load(path)
        if loaded is not None:
            return loaded
        torch.manual_seed(seed)  # as if nothing was read
    started = time.perf_counter()
    model = workload.build_model()
    if path is not None and time.perf_counter() - started >= SAVE_AFTER_S:
        _save(path, model)
    return model


def _file_name(name: str, seed: int) -> str:
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
    return f"{safe}-seed{seed}.pt"


def _load(path: Path) -> nn.Module | None:
    try:
        # our own file, written by this search's first process: not a stranger's pickle
        saved: dict[str, Any] = torch.load(path, weights_only=False, mmap=True)
        torch.set_rng_state(saved["rng"])
        model: nn.Module = saved["model"]
    except Exception:  # noqa: BLE001  (a damaged file, a class gone: build instead)
        return None
    return model


def _save(path: Path, model: nn.Module) -> None:
    partial = path.with_suffix(f".{os.getpid()}.tmp")
    try:
        torch.save({"model": model, "rng": torch.get_rng_state()}, partial)
        partial.replace(path)  # whole or absent, never half-written
    except Exception:  # noqa: BLE001  (a model that does not pickle: each process builds it)
        partial.unlink(missing_ok=True)
