"""Mode serve's part for a language model (a generate workload): each query is one prompt,
answered by greedy decoding of its new tokens in static batches (backends/serving_lm), and
Server's figure is the highest target QPS LoadGen judges VALID with its time to first token and
its time per output token within `--ttft-bounds` and `--tpot-bounds` at p99. The runs are kept
in the same fact as a classifier's ("serve", modes/serve.Served), with the token figures."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..core.modes import mode_of
from ..core.result import RunSpec
from ..errors import UsageError
from .generate import NEW_TOKENS, PROMPT_LENGTH
from .serve import (
    LATENCY_BOUND,
    SCENARIO,
    TPOT_BOUND,
    TTFT_BOUND,
    Served,
    ServedRun,
    choose_batching,
    generates,
    install_token_serving,
    served_of,
    served_run,
)

if TYPE_CHECKING:
    from ..backends.serving_lm import TokenReport, TokenRun, TokenSettings
    from ..backends.token_batcher import Generate
    from ..levers import Prepared

__all__ = ["check_kind", "serve_prompts"]

_LM_ONLY = (TTFT_BOUND, TPOT_BOUND, PROMPT_LENGTH, NEW_TOKENS)


def check_kind(spec: RunSpec, workload: Any) -> None:
    """Each option given fits the kind of workload served; UsageError in one line."""
    from ..backends.serving_lm import TOKEN_SCENARIOS

    if not generates(workload):
        given = [o.option for o in _LM_ONLY if o.value(spec) is not None]
        if given:
            raise UsageError(
                f"{', '.join(given)} apply to serving a language model, and {spec.workload} "
                "is not one"
            )
        return
    if LATENCY_BOUND.value(spec) is not None:
        raise UsageError(
            "--latency-bounds bounds a classifier's answers; a language model's Server is "
            "bounded by --ttft-bounds and --tpot-bounds"
        )
    scenario = SCENARIO.value(spec)
    if scenario not in TOKEN_SCENARIOS:
        raise UsageError(
            f"scenario {scenario} cannot serve a language model (LoadGen times no tokens "
            f"there); valid: {', '.join(TOKEN_SCENARIOS)}"
        )
    if NEW_TOKENS.of(spec) < 2:
        raise UsageError(
            f"serving a language model needs --new-tokens of 2 or more (its TPOT is the time "
            f"after the first token), not {NEW_TOKENS.of(spec)}"
        )
    mode_of("generate").check_args(spec, workload)  # room for the prompt and the tokens


def serve_prompts(prep: Prepared) -> Served:
    """Serve the prepared language model under LoadGen's scenarios; what they found."""
    from ..backends.serving_lm import prompt_generations, serve_tokens, warm_tokens

    started = time.perf_counter()
    generate = prompt_generations(prep)
    settings, record = _settings(prep.spec, generate)
    report = serve_tokens(settings, generate, warm_tokens(generate, settings.max_batch))
    served = replace(_served(settings.scenarios[0], report), **record)
    return replace(served, serving_s=time.perf_counter() - started)


install_token_serving(check_kind, serve_prompts)


def _settings(spec: RunSpec, generate: Generate) -> tuple[TokenSettings, dict[str, Any]]:
    """The settings, with the batcher's chosen where they are auto: the wait a twentieth of
    the TTFT bound, the largest batch whose whole warm generation fits (TTFT bound - wait) /
    2.5 (a prompt arriving as a batch starts waits for it, then for its own prefill)."""
    from ..backends.batch_choice import median_s
    from ..backends.serving_lm import TokenSettings

    ttft_s, tpot_s = TTFT_BOUND.of(spec) / 1e3, TPOT_BOUND.of(spec) / 1e3
    max_batch, wait_s, record = choose_batching(
        spec, ttft_s, lambda n: generate(n), timer=lambda run, n: median_s(run, n, 3)
    )
    record.update(ttft_bound_ms=ttft_s * 1e3, tpot_bound_ms=tpot_s * 1e3)
    settings = TokenSettings(
        scenarios=(str(SCENARIO.value(spec) or "server"),),
        ttft_bound_s=ttft_s,
        tpot_bound_s=tpot_s,
        new_tokens=NEW_TOKENS.of(spec),
        max_batch=max_batch,
        wait_s=wait_s,
    )
    return settings, record


def _served(scenario: str, report: TokenReport) -> Served:
    """Serve's fact with each run's token figures and Offline's tokens/s."""
    offline = report.runs.get("offline")
    served = served_of(scenario, report, _token_run)
    return replace(served, offline_tokens_per_s=offline.tokens_per_s if offline else None)


def _token_run(run: TokenRun) -> ServedRun:
    """A run as serve keeps it, with LoadGen's token figures and its words for an INVALID run."""

    def ms(figures: dict[str, float], percentile: str) -> float | None:
        return figures[percentile] * 1e3 if percentile in figures else None

    return replace(
        served_run(run),
        ttft_p50_ms=ms(run.ttft_s, "50.00"),
        ttft_p90_ms=ms(run.ttft_s, "90.00"),
        ttft_p99_ms=ms(run.ttft_s, "99.00"),
        tpot_p50_ms=ms(run.tpot_s, "50.00"),
        tpot_p90_ms=ms(run.tpot_s, "90.00"),
        tpot_p99_ms=ms(run.tpot_s, "99.00"),
        tokens_per_s=run.tokens_per_s,
        reasons=run.reasons,
    )
