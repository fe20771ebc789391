"""A generation's drift measured so that it means something for near-uniform logits (issue 27,
item 6): the logits' error as a share of their spread, and the tokens compared only where
fp32's top token leads by more than that error can flip. Every logit here is injected: built
in the test from a seeded generator, so nothing depends on the host's CPU or its load."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from accelbench.analysis.drift import (
    KEPT_LOGITS,
    compare_generations,
    kept_positions,
    logit_figures,
)
from accelbench.analysis.facts import DECISIVE_MARGIN, Drift
from accelbench.render.console import drift_note
from accelbench.workflows.optimize import Tolerance

VOCABULARY = 8192


def _random_logits(batch: int = 4, steps: int = 32, scale: float = 0.05, seed: int = 0):
    """Logits as random weights give them: near-uniform, small and close together."""
    generator = torch.Generator().manual_seed(seed)
    return scale * torch.randn(batch, steps, VOCABULARY, generator=generator)


def _reference(logits: torch.Tensor, kept_rows: int | None = None) -> dict[str, torch.Tensor]:
    """What backends/generate keeps of fp32's generation, from its logits (sequences, steps,
    vocabulary): its greedy tokens, the first step's logits, the kept ones, and every
    position's spread and lead."""
    spread, lead = logit_figures(logits)
    return {
        "tokens": logits.argmax(dim=-1),
        "logits": logits[:, 0],
        "kept": logits[: kept_rows or logits.shape[0]],
        "spread": spread,
        "lead": lead,
    }


def _drift(reference: torch.Tensor, candidate: torch.Tensor, kept_rows: int | None = None):
    """The variant's drift when, fed fp32's tokens, its logits are `candidate`."""
    kept = candidate[: kept_rows or candidate.shape[0]]
    found = compare_generations(
        _reference(reference, kept_rows), candidate.argmax(dim=-1), candidate[:, 0], None, kept
    )
    return Drift.from_record(found)


def _noise(logits: torch.Tensor, share: float, seed: int = 1) -> torch.Tensor:
    """Independent errors of `share` of each position's spread, as rounding makes."""
    generator = torch.Generator().manual_seed(seed)
    spread = logits.std(dim=-1, keepdim=True)
    return share * spread * torch.randn(logits.shape, generator=generator)


def test_near_uniform_logits_with_rounding_noise_pass():
    reference = _random_logits()
    drift = _drift(reference, reference + _noise(reference, 0.03))
    assert drift.by_spread and drift.spread_error == pytest.approx(0.03, rel=0.15)
    assert drift.positions == 4 * 32 and drift.compared_positions == 4 * 32
    # the near-ties flip, as they did for bf16 on llama-1b: the old check fails it
    assert drift.top1_agreement is not None and drift.top1_agreement < 0.95
    assert drift.decisive_positions is not None and 10 <= drift.decisive_positions < 128
    assert drift.decisive_agreement == 1.0
    assert Tolerance().breach(drift) is None
    assert Tolerance().tokens_undetermined(drift) == ""


def test_bf16_rounding_of_the_logits_passes():
    reference = _random_logits()
    rounded = reference.to(torch.bfloat16).float()
    drift = _drift(reference, rounded)
    assert drift.spread_error is not None and drift.spread_error < 0.01
    assert Tolerance().breach(drift) is None


def test_logits_off_by_a_large_share_of_their_spread_fail():
    reference = _random_logits()
    drift = _drift(reference, reference + _noise(reference, 0.8))
    breach = Tolerance().breach(drift)
    assert drift.spread_error is not None and drift.spread_error > 0.7
    assert breach is not None and "logits are off by 0." in breach
    assert "of their spread, over the tolerance 0.5" in breach


def _swap_top_two(logits: torch.Tensor, where: torch.Tensor) -> torch.Tensor:
    """The logits with fp32's top token and its second exchanged at the positions `where`:
    the token changes, and only two logits of the vocabulary move."""
    swapped = logits.clone()
    top = logits.topk(2, dim=-1)
    first, second = top.indices[..., 0], top.indices[..., 1]
    rows = swapped[where]
    index = torch.arange(rows.shape[0])
    rows[index, first[where]] = top.values[..., 1][where]
    rows[index, second[where]] = top.values[..., 0][where]
    swapped[where] = rows
    return swapped


def test_a_swapped_top_token_at_decisive_positions_fails():
    reference = _random_logits()
    candidate = reference + _noise(reference, 0.01)
    spread, lead = logit_figures(reference)
    clear = lead > 0.2 * spread  # well above 4 x 0.01 of the spread: decisive
    where = clear & (torch.rand(clear.shape, generator=torch.Generator().manual_seed(2)) < 0.5)
    assert where.sum() >= 5
    drift = _drift(reference, _swap_top_two(candidate, where))
    assert drift.spread_error is not None and drift.spread_error < 0.1  # two logits of 8,192
    assert drift.decisive_agreement is not None and drift.decisive_agreement < 0.95
    breach = Tolerance().breach(drift)
    assert breach is not None and "decisive positions, below 95%" in breach


def test_a_swap_beyond_the_kept_logits_is_judged_with_the_worst_kept_error():
    reference = _random_logits()
    candidate = reference + _noise(reference, 0.01)
    spread, lead = logit_figures(reference)
    where = lead > 0.2 * spread
    where[0] = False  # the first sequence, whose logits are kept, is untouched
    drift = _drift(reference, _swap_top_two(candidate, where), kept_rows=1)
    assert drift.compared_positions == 32 and drift.positions == 4 * 32
    breach = Tolerance().breach(drift)
    assert breach is not None and "decisive positions" in breach


def test_all_uniform_logits_are_undetermined_never_passed():
    reference = torch.zeros(2, 8, VOCABULARY)
    drift = _drift(reference, reference + _noise(_random_logits(2, 8), 1.0))
    assert drift.by_spread and drift.spread_error is None
    assert "no spread" in drift.undetermined
    breach = Tolerance().breach(drift)
    assert breach is not None and breach.startswith("its drift is undetermined")
    assert "undetermined: fp32's logits are all equal" in drift_note(drift)


def test_too_few_decisive_positions_leave_the_tokens_undetermined():
    # logits off by 0.3 of their spread (bf16 on llama-1b's random weights: 0.19 to 0.29)
    # leave few leads beyond 4 x 0.3: the tokens cannot be judged, the logits can
    reference = _random_logits(batch=1, steps=16)
    drift = _drift(reference, reference + _noise(reference, 0.3))
    assert drift.decisive_positions is not None and drift.decisive_positions < 10
    assert Tolerance().breach(drift) is None  # within the logit tolerance
    why = Tolerance().tokens_undetermined(drift)
    assert why.startswith("tokens undetermined: ") and "of 16 positions decisive" in why
    assert "10 needed" in why
    stricter = Tolerance(max_spread_error=0.2)
    assert "over the tolerance 0.2" in (stricter.breach(drift) or "")


def test_non_finite_logits_fail():
    reference = _random_logits(batch=1, steps=4)
    candidate = reference.clone()
    candidate[0, 2, 5] = float("nan")
    drift = _drift(reference, candidate)
    assert drift.not_finite and Tolerance().breach(drift) == "its outputs hold NaN or infinity"


def test_the_note_names_the_measure_in_words():
    reference = _random_logits()
    note = drift_note(_drift(reference, reference + _noise(reference, 0.03)))
    assert "logits off by 0.03" in note and "of their spread" in note
    assert f"leads by more than {DECISIVE_MARGIN:g} times that error" in note
    assert "decisive positions of 128" in note and "near-ties included" in note


def test_a_record_from_before_the_spread_measure_still_reads_and_is_judged_as_then():
    # issue 13's bf16 on llama-1b, as stored then: no spread figures
    old = {
        "reference": "PyTorch fp32 eager on the CPU, same weights and prompt",
        "max_rel_error": 0.16,
        "top1_agreement": 0.648,
        "samples": 128,
        "token_ids": True,
        "first_token_agreement": 1.0,
        "agreeing_prefix": 5.0,
    }
    drift = Drift.from_record(old)
    assert not drift.by_spread and drift.spread_error is None and drift.positions is None
    assert "max relative error 0.16 exceeds" in (Tolerance().breach(drift) or "")
    assert "64.8% of 128 generated tokens agree" in drift_note(drift)
    assert Tolerance().tokens_undetermined(drift) == ""


def test_a_stored_tolerance_without_the_generation_fields_reads():
    from accelbench.core.facts import Facts
    from accelbench.render.charts import _tolerance
    from accelbench.workflows.facts import OptimizeTag

    stored = OptimizeTag("fp32 eager", {"max_rel_error": 0.1, "min_top1": 0.9}).to_metrics()
    # a result as charts reads it: only its tag matters here
    result = SimpleNamespace(facts=Facts(stored))
    tolerance = _tolerance(result)  # type: ignore[arg-type]
    assert tolerance == Tolerance(max_rel_error=0.1, min_top1=0.9)
    assert tolerance.max_spread_error == 0.5 and tolerance.min_decisive == 10


@pytest.mark.parametrize(
    ("batch", "steps", "vocabulary", "kept"),
    [
        (4, 32, 1000, (4, 32)),  # everything fits
        (64, 128, 50257, (2, 128)),  # gpt2: two whole sequences
        (1, 128, 128256, (1, 128)),  # llama-1b at batch 1: all of it
        (1, 1024, 128256, (1, KEPT_LOGITS // 128256)),  # the first steps of one
    ],
)
def test_kept_positions(batch, steps, vocabulary, kept):
    assert kept_positions(batch, steps, vocabulary) == kept
