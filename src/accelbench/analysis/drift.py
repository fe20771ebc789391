"""Drift: how far a variant's outputs stray from the fp32 PyTorch model's on the same inputs.

The reference is the workload's model with the same seed (so the same weights), in eval mode,
in fp32 on the CPU, on the benchmark's own batch: what a variant computes is compared with what
the plain model computes, whatever device and backend the variant ran on.
"""

from __future__ import annotations

import os
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from ..workloads import Workload

__all__ = [
    "GENERATION_REFERENCE",
    "REFERENCE",
    "cached",
    "compare_generations",
    "compare_outputs",
    "reference_outputs",
]

REFERENCE = "PyTorch fp32 eager on the CPU, same weights and inputs"
GENERATION_REFERENCE = (
    "PyTorch fp32 eager on the CPU, same weights and prompt: its greedy tokens, each step "
    "predicted in its context, and its logits for the first token"
)


# A folder where the reference outputs of one workload are kept between the workers of one
# optimization search, which all compare with the same fp32 outputs (resnet50's at batch 256
# cost seconds of CPU in every worker otherwise). Set by the search for its own duration.
CACHE_DIR = "ACCELBENCH_REFERENCE_DIR"


def reference_outputs(workload: Workload, batch_size: int, seed: int = 0) -> torch.Tensor:
    """The fp32 model's outputs on the batch that `build` makes from `seed` (from the search's
    cache folder when one is set and holds them)."""
    found: torch.Tensor = cached(
        f"b{batch_size}-s{seed}", lambda: _reference(workload, batch_size, seed)
    )
    return found


def cached(key: str, make: Callable[[], Any]) -> Any:
    """`make()`, or what it made for `key` in this search's cache folder, if one is set."""
    folder = os.environ.get(CACHE_DIR)
    if not folder:
        return make()
    path = Path(folder) / f"{key}.pt"
    if path.exists():
        return torch.load(path)
    made = make()
    partial = path.with_suffix(f".{os.getpid()}.tmp")
    torch.save(made, partial)
    partial.replace(path)  # whole or absent, never half-written
    return made


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


def compare_generations(
    reference: dict[str, torch.Tensor],
    predicted: torch.Tensor,
    first_logits: torch.Tensor,
    free: torch.Tensor | None = None,
) -> dict[str, Any]:
    """A generation against the fp32 one. `predicted` holds the variant's token at each
    position when fed fp32's tokens (teacher forcing): the share equal to fp32's is its
    `top1_agreement` (each is the top-1 of the vocabulary), free of the cascade a free-running
    text has after its first difference. `free`, the variant's own free-running tokens, gives
    the median count of a sequence's leading tokens that agree, as information. The first
    token's logits are compared as `compare_outputs` compares outputs."""
    out = compare_outputs(reference["logits"], first_logits, classifier=True)
    same = predicted.cpu() == reference["tokens"]
    out.update(
        reference=GENERATION_REFERENCE,
        token_ids=True,
        first_token_agreement=out.pop("top1_agreement"),
        top1_agreement=float(same.float().mean()),
        samples=int(same.numel()),
    )
    if free is not None:
        agree = free.cpu() == reference["tokens"]
        leading = [int(row.int().cumprod(0).sum()) for row in agree]
        out["agreeing_prefix"] = float(statistics.median(leading))
    return out
