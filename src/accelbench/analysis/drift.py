"""Drift: how far a variant's outputs stray from the fp32 PyTorch model's on the same inputs.

The reference is the workload's model with the same seed (so the same weights), in eval mode,
in fp32 on the CPU, on the benchmark's own batch: what a variant computes is compared with what
the plain model computes, whatever device and backend the variant ran on.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch

from ..workloads import Workload

__all__ = ["REFERENCE", "compare_outputs", "reference_outputs"]

REFERENCE = "PyTorch fp32 eager on the CPU, same weights and inputs"


# A folder where the reference outputs of one workload are kept between the workers of one
# optimization search, which all compare with the same fp32 outputs (resnet50's at batch 256
# cost seconds of CPU in every worker otherwise). Set by the search for its own duration.
CACHE_DIR = "ACCELBENCH_REFERENCE_DIR"


def reference_outputs(workload: Workload, batch_size: int, seed: int = 0) -> torch.Tensor:
    """The fp32 model's outputs on the batch that `build` makes from `seed` (from the search's
    cache folder when one is set and holds them)."""
    folder = os.environ.get(CACHE_DIR)
    if not folder:
        return _reference(workload, batch_size, seed)
    path = Path(folder) / f"b{batch_size}-s{seed}.pt"
    if path.exists():
        return torch.load(path)
    outputs = _reference(workload, batch_size, seed)
    partial = path.with_suffix(f".{os.getpid()}.tmp")
    torch.save(outputs, partial)
    partial.replace(path)  # whole or absent, never half-written
    return outputs


def _reference(workload: Workload, batch_size: int, seed: int) -> torch.Tensor:
    torch.manual_seed(seed)  # as build() does: the same weights
    model = workload.build_model().eval()
    inputs, _ = workload.make_batch(torch.Generator().manual_seed(seed), batch_size)
    with torch.inference_mode():
        return workload.forward(model, inputs).float()


def compare_outputs(
    reference: torch.Tensor, candidate: torch.Tensor, classifier: bool
) -> dict[str, Any]:
    """Maximum relative error (against the reference's largest magnitude, so near-zero outputs
    do not blow it up) and, for classifiers, the share of samples whose top-1 class agrees."""
    candidate = candidate.float().cpu().reshape(reference.shape)
    scale = max(float(reference.abs().max()), 1e-12)
    out: dict[str, Any] = {
        "max_abs_error": float((candidate - reference).abs().max()),
        "reference": REFERENCE,
        "samples": int(reference.shape[0]) if reference.dim() else 1,
    }
    out["max_rel_error"] = out["max_abs_error"] / scale
    if not torch.isfinite(candidate).all():  # JSON has no infinity: say so instead
        out.update(max_abs_error=None, max_rel_error=None, not_finite=True)
    if classifier and reference.dim() >= 2:
        agree = candidate.argmax(dim=-1) == reference.argmax(dim=-1)
        out["top1_agreement"] = float(agree.float().mean())
    else:
        out["top1_unavailable"] = "not a classifier: the workload names no classes"
    return out
