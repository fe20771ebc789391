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
from ..workloads.weights import build_seeded
from .facts import DECISIVE_MARGIN

__all__ = [
    "DECISIVE_MARGIN",
    "GENERATION_REFERENCE",
    "KEPT_LOGITS",
    "REFERENCE",
    "cached",
    "compare_generations",
    "compare_outputs",
    "kept_positions",
    "logit_drift",
    "logit_figures",
    "reference_outputs",
]

REFERENCE = "PyTorch fp32 eager on the CPU, same weights and inputs"
GENERATION_REFERENCE = (
    "PyTorch fp32 eager on the CPU, same weights and prompt: its greedy tokens and its "
    "logits, each step predicted in its context"
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
    model = build_seeded(workload, seed).eval()  # as build() does: the same weights
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
    logits: torch.Tensor | None = None,
) -> dict[str, Any]:
    """A generation against the fp32 one, each step predicted in fp32's context (teacher
    forcing: `predicted` holds the variant's token at each position when fed fp32's tokens),
    so that one difference does not send the rest of the text another way.

    With `logits`, the variant's at the positions `reference["kept"]` holds (`logit_drift`),
    the check is the one that means something for near-uniform logits: the logit error
    relative to their spread, and the tokens compared only where fp32's top token leads by
    more than that error can flip. `top1_agreement` stays the share of all the predictions
    equal to fp32's, near-ties included (all that a record before issue 27 holds). `free`, the
    variant's own free-running tokens, gives the median count of a sequence's leading tokens
    that agree, as information. The first token's logits are compared as `compare_outputs`
    compares outputs, as information too."""
    out = compare_outputs(reference["logits"], first_logits, classifier=True)
    same = predicted.cpu() == reference["tokens"]
    out.update(
        reference=GENERATION_REFERENCE,
        token_ids=True,
        first_token_agreement=out.pop("top1_agreement"),
        top1_agreement=float(same.float().mean()),
        samples=int(same.numel()),
    )
    if logits is not None and "kept" in reference:
        out.update(logit_drift(reference, same, logits))
    if free is not None:
        agree = free.cpu() == reference["tokens"]
        leading = [int(row.int().cumprod(0).sum()) for row in agree]
        out["agreeing_prefix"] = float(statistics.median(leading))
    return out


# The most logits (positions x vocabulary) kept of each generation for the comparison: 64 MiB
# in fp32, all 128 positions of one llama-1b sequence, 2 of gpt2's. Past it the error measured
# on the kept positions stands for the others (it hardly varies between positions).
KEPT_LOGITS = 1 << 24


def kept_positions(batch: int, steps: int, vocabulary: int) -> tuple[int, int]:
    """The sequences and steps whose logits a generation keeps: every step of as many
    sequences as `KEPT_LOGITS` holds, at least the first steps of one."""
    if steps * vocabulary <= KEPT_LOGITS:
        return min(batch, KEPT_LOGITS // (steps * vocabulary)), steps
    return 1, max(1, KEPT_LOGITS // vocabulary)


def logit_figures(logits: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Each position's spread (the logits' standard deviation over the vocabulary) and its
    top token's lead over the second, of logits (..., vocabulary)."""
    top = logits.float().topk(2, dim=-1).values
    return logits.float().std(dim=-1), top[..., 0] - top[..., 1]


def logit_drift(
    reference: dict[str, torch.Tensor], same: torch.Tensor, logits: torch.Tensor
) -> dict[str, Any]:
    """The variant's logits against fp32's where both were kept, and its tokens at the
    positions decisive for its error. `same` says, per (sequence, step), whether its token is
    fp32's; `reference` holds fp32's kept logits (`kept`, (sequences, steps, vocabulary)) and
    every position's `spread` and `lead` (`logit_figures`)."""
    kept, spread, lead = reference["kept"], reference["spread"], reference["lead"]
    rows, steps = kept.shape[0], kept.shape[1]
    candidate = logits.float().cpu()[:rows, :steps]
    out: dict[str, Any] = {"positions": int(spread.numel()), "decisive_margin": DECISIVE_MARGIN}
    if not torch.isfinite(candidate).all():
        return {**out, "not_finite": True}
    # each kept position's error: the rms over the vocabulary, as a share of its spread
    # (positions whose logits are all equal have none, and are left out)
    shares = (candidate - kept).pow(2).mean(dim=-1).sqrt() / spread[:rows, :steps]
    has_spread = spread > 0
    measured = shares[has_spread[:rows, :steps]]
    out["compared_positions"] = int(measured.numel())
    if not measured.numel():
        return {**out, "undetermined": "fp32's logits are all equal: they have no spread"}
    worst = float(measured.max())
    error = torch.full_like(spread, worst)  # the worst kept position's, where none was kept
    error[:rows, :steps] = shares
    decisive = has_spread & (lead > DECISIVE_MARGIN * error * spread)
    agreeing = same[decisive].float()
    return {
        **out,
        "spread_error": worst,
        "spread_error_median": float(measured.median()),
        "decisive_positions": int(decisive.sum()),
        "decisive_agreement": float(agreeing.mean()) if agreeing.numel() else None,
    }
