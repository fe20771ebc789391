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
    AUTO,
    BATCH_WAIT,
    LATENCY_BOUND,
    MAX_BATCH,
    SCENARIO,
    TPOT_BOUND,
    TTFT_BOUND,
    Served,
    ServedRun,
    generates,
    install_token_serving,
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
    from ..backends import batch_choice
    from ..backends.serving_lm import TokenSettings

    ttft_s, tpot_s = TTFT_BOUND.of(spec) / 1e3, TPOT_BOUND.of(spec) / 1e3
    wait, most = BATCH_WAIT.value(spec), MAX_BATCH.value(spec)
    wait_s = batch_choice.auto_wait_s(ttft_s) if wait == AUTO else BATCH_WAIT.of(spec) / 1e3
    record: dict[str, Any] = {
        "auto": tuple(o.name for o in (MAX_BATCH, BATCH_WAIT) if o.value(spec) == AUTO),
        "ttft_bound_ms": ttft_s * 1e3,
        "tpot_bound_ms": tpot_s * 1e3,
    }
    if most == AUTO:
        budget = batch_choice.service_budget_s(ttft_s, wait_s)
        choice = batch_choice.choose_max_batch(
            lambda n: generate(n),
            budget,
            timer=lambda run, n: batch_choice.median_s(run, n, 3),
        )
        max_batch = choice.max_batch
        record["service_budget_ms"] = budget * 1e3
        record["service_ms"] = {str(size): took * 1e3 for size, took in choice.timed}
    else:
        max_batch = MAX_BATCH.of(spec)
    record.update(max_batch=max_batch, max_batches=(max_batch,), wait_ms=wait_s * 1e3)
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
    search = report.server
    runs = [*report.runs.values(), *(search.tried if search else ())]
    offline = report.runs.get("offline")
    return Served(
        scenario=scenario,
        figure=_figure(scenario, report),
        runs=tuple(_run(run) for run in runs),
        server_qps=search.qps if search else None,
        failed_above=search.failed_above if search else None,
        search_s=search.elapsed_s if search else None,
        why_none=search.why_none if search else "",
        server_to_offline=report.server_to_offline,
        offline_tokens_per_s=offline.tokens_per_s if offline else None,
    )


def _figure(scenario: str, report: TokenReport) -> float | None:
    """Server: its QPS at the bounds; Offline: prompts/s; SingleStream: one over its p90."""
    if scenario == "server":
        return report.server.qps if report.server else None
    run = report.runs[scenario].result
    if not run.valid:
        return None
    return run.qps if scenario == "offline" else 1.0 / run.latency_s["90.00"]


def _run(run: TokenRun) -> ServedRun:
    r = run.result

    def ms(figures: dict[str, float], percentile: str) -> float | None:
        return figures[percentile] * 1e3 if percentile in figures else None

    return ServedRun(
        scenario=r.scenario,
        target_qps=r.target_qps,
        valid=r.valid,
        failed=r.failed,
        qps=r.qps,
        p50_ms=r.latency_s["50.00"] * 1e3,
        p90_ms=r.latency_s["90.00"] * 1e3,
        p99_ms=r.latency_s["99.00"] * 1e3,
        samples=r.samples,
        late=r.late,
        batches={str(size): count for size, count in run.batches.items()},
        summary=r.summary,
        ttft_p50_ms=ms(run.ttft_s, "50.00"),
        ttft_p90_ms=ms(run.ttft_s, "90.00"),
        ttft_p99_ms=ms(run.ttft_s, "99.00"),
        tpot_p50_ms=ms(run.tpot_s, "50.00"),
        tpot_p90_ms=ms(run.tpot_s, "90.00"),
        tpot_p99_ms=ms(run.tpot_s, "99.00"),
        tokens_per_s=run.tokens_per_s,
        reasons=run.reasons,
    )
