"""Why a generation is as fast as it is: the bytes each decoded token must read, the bandwidth
that achieves and its share of the device's, and the prefill's FLOPs and MFU.

A decode step runs the whole model for one token per sequence, so it reads every weight once
and the KV cache at its current length: its time is bound by memory bandwidth. The prefill
runs the prompt's tokens together, a compute-bound pass, counted by the FLOP counter.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from ..core.peaks import PeakFigures
from ..workloads.inputs import Inputs, leading
from ..workloads.llm import KVLayout, LanguageModel, forward_with_cache
from .facts import Generation

__all__ = [
    "count_prefill_flops",
    "generation_figures",
    "kv_cache_bytes",
    "mean_decode_length",
]


def kv_cache_bytes(layout: KVLayout, length: float, batch: int, dtype_bytes: int) -> float:
    """The KV cache at `length` positions: a key and a value per layer, KV head, head
    dimension, position and sequence, at the cache's dtype."""
    per_position = 2 * layout.layers * layout.kv_heads * layout.head_dim * dtype_bytes
    return per_position * length * batch


def mean_decode_length(prompt_length: int, new_tokens: int) -> float:
    """The positions a decode step attends over, averaged over the new_tokens - 1 steps: step j
    (1..N-1) feeds token j at position P + j - 1 and attends over P + j positions, and the
    mean of P + j over those steps is P + N / 2."""
    if new_tokens < 2:
        raise ValueError(f"no decode step with {new_tokens} new token(s)")
    return prompt_length + new_tokens / 2


def count_prefill_flops(workload: LanguageModel, prompt_length: int) -> float | None:
    """FLOPs of one sequence's prefill (the forward over the prompt, as the generation runs
    it: the head over the last position only), on the meta device, so counting costs no
    compute; None when the model cannot be counted there."""
    from .flops import count_flops

    def prefill(model: nn.Module, prompt: Inputs) -> torch.Tensor:
        return forward_with_cache(model, leading(prompt), None)[0]

    try:
        with torch.device("meta"):
            model = workload.build_model()
        prompt = workload.prompt(torch.Generator().manual_seed(0), 1, prompt_length)
        return float(count_flops(model, prompt.to("meta"), prefill, None))
    except Exception:  # the figure is optional: None says "not counted"
        return None


def generation_figures(
    generation: Generation,
    precision: str,
    peaks: PeakFigures | None,
    prefill_flops_per_sequence: float | None,
    decode_flops_per_sequence: float | None = None,
) -> dict[str, Any]:
    """The figures beside a generation's timings: bandwidth share of the decode steps, the
    least time a step could take (`_decode_floors`), and the prefill's achieved FLOP/s and MFU
    (each only where its inputs are known). A decode step's FLOPs are a one-token forward's:
    its attention over the cache is left out, so its compute floor is a floor."""
    out: dict[str, Any] = {}
    bandwidth = peaks.bandwidth if peaks else None
    if bandwidth and generation.achieved_bandwidth is not None:
        out["peak_bandwidth"] = bandwidth
        out["bandwidth_source"] = peaks.source if peaks else ""
        out["bandwidth_share"] = generation.achieved_bandwidth / bandwidth
    out.update(_decode_floors(generation, precision, peaks, decode_flops_per_sequence))
    if prefill_flops_per_sequence is None:
        return out
    flops = prefill_flops_per_sequence * generation.batch_size
    out["prefill_flops"] = flops
    out["prefill_achieved_flops"] = flops / generation.prefill_median_s
    peak = peaks.flops.get(precision) if peaks else None
    if peak:
        out["peak_flops"] = peak
        out["prefill_mfu"] = out["prefill_achieved_flops"] / peak
    return out


def _decode_floors(
    generation: Generation,
    precision: str,
    peaks: PeakFigures | None,
    decode_flops_per_sequence: float | None,
) -> dict[str, Any]:
    """The least time a decode step could take at the device's peaks: its bytes over the
    bandwidth and, where counted, its FLOPs over the precision's peak; and which share of the
    median TPOT (a decode step, on average) the larger is."""
    bandwidth = peaks.bandwidth if peaks else None
    p50, per_token = generation.tpot_median_s, generation.bytes_per_token
    if not bandwidth or not p50 or per_token is None:
        return {}
    out: dict[str, Any] = {"decode_memory_floor_s": per_token / bandwidth}
    peak = peaks.flops.get(precision) if peaks else None
    if decode_flops_per_sequence and peak:
        per_step = decode_flops_per_sequence * generation.batch_size
        out["decode_compute_floor_s"] = per_step / peak
    out["decode_floor_share"] = max(out.values()) / p50
    return out
