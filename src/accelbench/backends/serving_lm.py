"""Serving a language model under LoadGen's load: each query is one prompt, its answer the
configuration's new tokens, made by greedy decoding in static batches (backends/token_batcher).
LoadGen times every query's first token (TTFT) and the time per output token after it (TPOT),
with its token latencies on (`use_token_latencies`), and judges Server by their p99s.

What it finds, each from LoadGen's own runs and verdicts:
- SingleStream: one prompt at a time; its TTFT and TPOT percentiles.
- Offline: every prompt at once; the throughput in prompts/s and LoadGen's tokens/s.
- Server: Poisson arrivals at a target rate; the highest target whose run LoadGen judges VALID
  (its TTFT p99 within `ttft_bound_s`, its TPOT p99 within `tpot_bound_s`, early stopping met
  for both), by bisection between 0 and Offline's prompts/s, as backends/serving does for a
  classifier. Server needs Offline (its ceiling) and SingleStream (a bound that even one prompt
  at a time misses is said, not searched), so asking for it runs both.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import UsageError
from .loadgen import PERCENTILES, Driver, LoadResult, LoadTest, read_detail, read_result
from .serve_checks import check_settings, scenario_runs
from .server_search import RunLimits, ServerSearch, bisect, not_found, offline
from .token_batcher import Generate, Hook, TokenBatcher

if TYPE_CHECKING:
    from ..levers import Prepared

__all__ = [
    "TOKEN_SCENARIOS",
    "TokenReport",
    "TokenRun",
    "TokenSearch",
    "TokenSettings",
    "TokenWarm",
    "prompt_generations",
    "serve_tokens",
    "warm_tokens",
]

TOKEN_SCENARIOS = ("singlestream", "offline", "server")  # MultiStream has no token latencies
# SingleStream only says whether one prompt at a time meets the bounds (its p99: the second
# highest of 128); a generation takes milliseconds to seconds, not a classifier's microseconds
SINGLE_STREAM_QUERIES = 128
# a language model answers tens to thousands of prompts a second, not millions: Offline's first
# run expects the warm batch's rate, capped as a classifier's is
OFFLINE_FIRST_QPS = 50_000.0


@dataclass(frozen=True)
class TokenSettings:
    """How to serve a language model: checked as it is made (UsageError, one line)."""

    scenarios: tuple[str, ...] = ("server",)
    ttft_bound_s: float = 2.0  # Server's TTFT p99 bound
    tpot_bound_s: float = 0.1  # Server's TPOT p99 bound
    new_tokens: int = 32  # each answer's tokens
    max_batch: int = 8  # the most prompts one batch takes
    wait_s: float = 0.1  # the longest the oldest prompt waits for others to join its batch
    duration_s: float = 2.0  # each LoadGen run's minimum duration
    # each run's minimum query count: early stopping needs >= 459 with none late; a language
    # model's rate is low, so the least with room rather than a classifier's 1024
    min_queries: int = 500
    search_steps: int = 6
    search_budget_s: float = 150.0
    server_qps: float | None = None  # one Server run at this target instead of the search

    def __post_init__(self) -> None:
        refused = "scenario {!r} cannot serve a language model"
        check_settings(self, TOKEN_SCENARIOS, refused, ("ttft_bound_s", "tpot_bound_s"))
        if type(self.new_tokens) is not int or self.new_tokens < 2:
            raise UsageError(  # LoadGen: "Number of tokens need to be greater than 1"
                f"serving needs at least 2 new tokens (a TPOT is the time after the first), "
                f"not {self.new_tokens!r}"
            )

    def runs(self) -> tuple[str, ...]:
        """The scenarios to run, in order: Server's search needs the other two first."""
        return scenario_runs(self.scenarios, TOKEN_SCENARIOS)


@dataclass(frozen=True)
class TokenRun:
    """One LoadGen run of a language model: LoadGen's result, its token figures, the batches
    formed (size -> count)."""

    result: LoadResult
    ttft_s: dict[str, float]  # percentile ("99.00") -> seconds; empty for Offline
    tpot_s: dict[str, float]
    tokens_per_s: float | None  # LoadGen's (Offline: tokens over the run; Server: completed)
    reasons: tuple[str, ...]  # LoadGen's own words for an INVALID run
    batches: dict[int, int] = field(default_factory=dict)


def read_tokens(logs: Path, test: LoadTest, batches: dict[int, int]) -> TokenRun:
    """The run LoadGen logged in `logs`, with the token figures of its detail log."""
    detail = read_detail(logs)

    def percentiles(key: str) -> dict[str, float]:
        return {p: detail[key.format(p)] / 1e9 for p in PERCENTILES if key.format(p) in detail}

    rate = detail.get("result_completed_tokens_per_second", detail.get("result_tokens_per_second"))
    said = str(detail.get("result_invalid_reason", "")).replace("\n", " ").split(" * ")
    return TokenRun(
        result=read_result(logs, test),
        ttft_s=percentiles("result_first_token_{}_percentile_latency_ns"),
        tpot_s=percentiles("result_time_per_output_token_{}_percentile_ns"),
        tokens_per_s=None if rate is None else float(rate),
        reasons=tuple(r.strip() for r in said if r.strip()),
        batches=batches,
    )


TokenSearch = ServerSearch[TokenRun]


@dataclass(frozen=True)
class TokenReport:
    settings: TokenSettings
    runs: dict[str, TokenRun] = field(default_factory=dict)  # SingleStream, Offline
    server: TokenSearch | None = None

    @property
    def server_to_offline(self) -> float | None:
        return self.server.to_offline(self.runs.get("offline")) if self.server else None


@dataclass(frozen=True)
class TokenWarm:
    """Seconds a whole generation takes once warm: of one prompt, and of `max_batch`."""

    single_s: float
    full_s: float


class _Session:
    """LoadGen's process and the request loop, across one configuration's runs."""

    def __init__(self, settings: TokenSettings, generate: Generate) -> None:
        self.settings, self.generate = settings, generate
        self.logs = Path(tempfile.mkdtemp(prefix="accelbench-loadgen-lm-"))
        self.driver = Driver(self.logs)

    def run(self, test: LoadTest) -> TokenRun:
        s = self.settings
        batcher = TokenBatcher(s.max_batch, s.wait_s, s.new_tokens, test.scenario != "offline")
        logs, formed = self.driver.run(test, partial(batcher.serve, generate=self.generate))
        return read_tokens(logs, test, formed)

    def test(self, scenario: str, **values: Any) -> LoadTest:
        s = self.settings
        return LoadTest(
            scenario=scenario,
            min_duration_s=s.duration_s,
            min_queries=s.min_queries,
            samples=s.max_batch,
            # LoadGen's whole-answer bound (its count of late answers only; the verdict is
            # the token bounds'): the first token's bound and every later token's
            latency_bound_s=s.ttft_bound_s + (s.new_tokens - 1) * s.tpot_bound_s,
            tokens=True,
            ttft_bound_s=s.ttft_bound_s,
            tpot_bound_s=s.tpot_bound_s,
            **values,
        )


def serve_tokens(settings: TokenSettings, generate: Generate, warm: TokenWarm) -> TokenReport:
    """Run `settings`' scenarios against `generate` in this process; LoadGen runs in a process
    of its own. `warm`: the generations' times after warm-up, which size LoadGen's runs."""
    session = _Session(settings, generate)
    try:
        runs: dict[str, TokenRun] = {}
        if "singlestream" in settings.runs():
            test = session.test("singlestream", expected_latency_s=warm.single_s)
            queries = min(settings.min_queries, SINGLE_STREAM_QUERIES)
            runs["singlestream"] = session.run(replace(test, min_queries=queries))
        if "offline" in settings.runs():
            runs["offline"] = _offline(session, settings.max_batch / warm.full_s)
        search = _search(session, runs) if "server" in settings.runs() else None
        return TokenReport(settings, runs, search)
    finally:
        session.driver.stop()
        shutil.rmtree(session.logs, ignore_errors=True)  # what matters of them is read


def _offline(session: _Session, expected_qps: float) -> TokenRun:
    """As a classifier's Offline (server_search.offline). Its one query holds rate x duration
    prompts: no floor on the count (Offline has no early stopping), so that a slow model's run
    lasts about its minimum duration, not `min_queries` generations."""

    def run_at(qps: float) -> TokenRun:
        return session.run(replace(session.test("offline", target_qps=qps), min_queries=1))

    return offline(run_at, min(OFFLINE_FIRST_QPS, expected_qps))


def _search(session: _Session, runs: dict[str, TokenRun]) -> TokenSearch:
    """Bisection over Server's target QPS, between 0 and Offline's prompts/s
    (backends/server_search); one run where the user gave the target."""
    started = time.monotonic()
    s = session.settings
    why = _alone_misses(s, runs["singlestream"])
    if why:
        return TokenSearch((), None, None, time.monotonic() - started, why)
    if s.server_qps:
        run = session.run(session.test("server", target_qps=s.server_qps))
        best, failed = (run, None) if run.result.valid else (None, s.server_qps)
        why = "" if best else f"LoadGen judged {s.server_qps:.4g} QPS INVALID: "
        why += "; ".join(run.reasons) if why else ""
        return TokenSearch((run,), best, failed, time.monotonic() - started, why)
    ceiling = runs["offline"].result.qps
    limits = RunLimits(s.duration_s, s.min_queries, s.search_steps, s.search_budget_s)
    found = bisect(lambda target: session.run(session.test("server", target_qps=target)),
                   ceiling, limits, started)  # fmt: skip
    return replace(found, why_none=not_found(found, limits, ceiling, "the bounds"))


def _alone_misses(settings: TokenSettings, alone: TokenRun) -> str:
    """Why no load can meet the bounds, where even one prompt at a time misses one."""
    for name, figures, bound in (
        ("TTFT", alone.ttft_s, settings.ttft_bound_s),
        ("TPOT", alone.tpot_s, settings.tpot_bound_s),
    ):
        p99 = figures.get("99.00")
        if p99 is not None and p99 > bound:
            return (
                f"even one prompt at a time has a {name} of {p99 * 1e3:.3g} ms at p99; "
                f"the bound is {bound * 1e3:.3g} ms"
            )
    return ""


def prompt_generations(prep: Prepared) -> Generate:
    """`generate(n, first, step)`: the first n prompts of the prepared batch through greedy
    decoding of the configuration's new tokens (backends/generate: a dynamic cache, the device
    synchronized after the prefill and every step, `first` and `step` called after them),
    under inference_mode and autocast."""
    import torch

    from ..analysis.facts import generation_lengths
    from ..workloads.inputs import first_samples, leading
    from .generate import generate_once

    prompts, new = leading(prep.batch[0]), generation_lengths(prep.spec)[1]

    def generate(size: int, first: Hook | None = None, step: Hook | None = None) -> None:
        with torch.inference_mode(), prep.autocast():
            generate_once(
                prep.model,
                leading(first_samples(prompts, size)),
                new,
                prep.device.synchronize,
                on_first=first,
                on_step=step,
            )

    return generate


def warm_tokens(generate: Generate, max_batch: int, times: int = 3) -> TokenWarm:
    """Two generations of one prompt and of `max_batch` (allocations, kernels' first calls),
    then the median of `times` of each."""
    from .batch_choice import median_s

    def run(size: int) -> None:
        generate(size)

    for size in (1, max_batch, 1, max_batch):
        run(size)
    return TokenWarm(median_s(run, 1, times), median_s(run, max_batch, times))
