"""Mode "serve": the model answers MLPerf LoadGen's queries, batched dynamically
(backends/serving). Its rate is the scenario's figure: Server, the highest target QPS whose p99
LoadGen judges within the bound; Offline, the throughput; SingleStream, one over its p90.
Every LoadGen run behind it, with LoadGen's verdict and summary, is kept as the fact "serve".
A language model (a generate workload) is served prompt by prompt instead, its Server judged by
LoadGen's time to first token and time per output token (modes/serve_lm)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from ..core.facts import Fact, fact
from ..core.mode_options import Count, ModeOption
from ..core.modes import Mode, register_mode
from ..core.result import RunSpec, Value
from ..errors import MeasuredFailure
from .generate import NEW_TOKENS, PROMPT_LENGTH
from .infer import Infer

if TYPE_CHECKING:
    from ..backends.loadgen import LoadResult
    from ..backends.server_search import ServerSearch
    from ..core.stats import Measurement
    from ..levers import Prepared

__all__ = [
    "SERVE",
    "BATCH_WAIT",
    "LATENCY_BOUND",
    "MAX_BATCH",
    "SCENARIO",
    "TPOT_BOUND",
    "TTFT_BOUND",
    "Serve",
    "Served",
    "ServedRun",
    "choose_batching",
    "generates",
    "install_token_serving",
    "served_of",
    "served_run",
]

SERVE = "serve"
AUTO = "auto"  # a batching setting the worker chooses from the bound


@dataclass(frozen=True)
class Milliseconds(ModeOption):
    """A time in milliseconds: finite, above 0 (or at it, where `zero` is allowed); or, where
    `auto` is allowed, the word "auto" (the worker chooses it: backends/batch_choice)."""

    single_metavar: str = "MS"
    zero: bool = False
    auto: bool = False

    def parse(self, word: str) -> Value:
        if self.auto and word == AUTO:
            return AUTO
        try:
            number = float(word)
        except ValueError:
            either = " or 'auto'" if self.auto else ""
            raise ValueError(
                f"{self.name}: {word!r} is not a number of milliseconds{either}"
            ) from None
        self.check(number)
        return number

    def word(self, value: Value) -> str:
        return f"{value:g}" if isinstance(value, float) else str(value)

    def check(self, value: Any) -> None:
        if self.auto and value == AUTO:
            return
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if not (number and math.isfinite(value) and (value >= 0 if self.zero else value > 0)):
            least = "0 or more" if self.zero else "more than 0"
            either = " or 'auto'" if self.auto else ""
            raise ValueError(
                f"{self.name} must be a number of milliseconds {least}{either}, not {value!r}"
            )

    def label(self, value: Value) -> str:
        return f"{self.prefix}={AUTO}" if value == AUTO else super().label(value)

    def of(self, spec: RunSpec) -> float:
        value = self.value(spec)
        if not isinstance(value, (int, float)):
            raise ValueError(f"{spec.mode} needs {self.name}; the configuration has none")
        return float(value)


def generates(workload: Any) -> bool:
    """Whether `workload` is a generate workload (a language model with generate's lengths:
    workloads.llm.LanguageModel, or its described facts): it is served prompt by prompt."""
    return getattr(workload, "new_tokens", None) is not None


@dataclass(frozen=True)
class ForKind(Milliseconds):
    """A bound whose default applies to one kind of workload only: a classifier's (`lm` false)
    or a language model's (`lm` true); the other kind runs without it."""

    lm: bool = False

    def default_for(self, workload: Any) -> Value | None:
        return self.default if generates(workload) == self.lm else None


@dataclass(frozen=True)
class AutoCount(Count):
    """A whole number of queries, or "auto" (the worker chooses it: backends/batch_choice)."""

    def parse(self, word: str) -> Value:
        if word == AUTO:
            return AUTO
        try:
            number = int(word)
        except ValueError:
            raise ValueError(
                f"{self.name}: {word!r} is neither a whole number nor 'auto'"
            ) from None
        self.check(number)
        return number

    def check(self, value: Any) -> None:
        if value != AUTO:
            super().check(value)

    def label(self, value: Value) -> str:
        return f"{self.prefix}={AUTO}" if value == AUTO else super().label(value)


@dataclass(frozen=True)
class Scenario(ModeOption):
    def label(self, value: Value) -> str:
        return str(value)


SCENARIO = Scenario(
    "scenario",
    option="--scenarios",
    single="--scenario",
    help="LoadGen scenario: server (the highest QPS within --latency-bounds at p99, a language "
    "model's within --ttft-bounds and --tpot-bounds; runs singlestream and offline too), "
    "offline (throughput), singlestream (p90 latency), multistream (groups of 8 samples: "
    "p99 latency)",
    words=("server", "offline", "singlestream", "multistream"),
    default="server",
)
LATENCY_BOUND = ForKind(
    "latency_bound_ms",
    option="--latency-bounds",
    single="--latency-bound",
    help="Server's p99 latency bound, in ms (default: 10; not for a language model)",
    prefix="p99<=",
    default=10.0,
)
# A language model's Server bounds; the defaults are MLPerf Inference's for llama3.1-8b Server
# (loadgen/mlperf.conf: ttft_latency 2000, tpot_latency 100)
TTFT_BOUND = ForKind(
    "ttft_bound_ms",
    option="--ttft-bounds",
    single="--ttft-bound",
    help="a language model's Server bound on the time to first token at p99, in ms "
    "(default: 2000)",
    prefix="ttft<=",
    default=2000.0,
    lm=True,
)
TPOT_BOUND = ForKind(
    "tpot_bound_ms",
    option="--tpot-bounds",
    single="--tpot-bound",
    help="a language model's Server bound on the time per output token at p99, in ms "
    "(default: 100)",
    prefix="tpot<=",
    default=100.0,
    lm=True,
)
MAX_BATCH = AutoCount(
    "max_batch",
    option="--max-batches",
    single="--max-batch",
    help="the most queries one batch takes, or auto: the largest of 1, 2, 4, 8, 16, 24, 32, "
    "48, 64, 96, 128 whose warm batch takes at most (bound - wait) / 2.5 (a language model: "
    "its whole generation, within the TTFT bound) (default: auto)",
    prefix="mb",
    default=AUTO,
)
BATCH_WAIT = Milliseconds(
    "batch_wait_ms",
    option="--batch-waits",
    single="--batch-wait",
    help="the longest the oldest query waits for others to join its batch, in ms, or auto: "
    "the bound / 20 (a language model: the TTFT bound / 20) (default: auto)",
    prefix="w",
    default=AUTO,
    zero=True,
    auto=True,
)


@dataclass(frozen=True)
class ServedRun:
    """One LoadGen run: its settings, LoadGen's verdict and figures, the batches formed."""

    scenario: str
    target_qps: float
    valid: bool
    failed: tuple[str, ...]  # LoadGen's checks that failed
    qps: float  # completed samples per second
    p50_ms: float
    p90_ms: float
    p99_ms: float
    samples: int
    late: int  # over the latency bound, LoadGen's count
    batches: Mapping[str, int]  # batch size -> batches of that size the batcher formed
    summary: str  # LoadGen's mlperf_log_summary.txt
    process: int = 0  # which of the configuration's processes ran it, from 0
    # A language model's run (modes/serve_lm): LoadGen's token figures; the latencies above
    # are then whole answers'
    ttft_p50_ms: float | None = None
    ttft_p90_ms: float | None = None
    ttft_p99_ms: float | None = None
    tpot_p50_ms: float | None = None
    tpot_p90_ms: float | None = None
    tpot_p99_ms: float | None = None
    tokens_per_s: float | None = None
    reasons: tuple[str, ...] = ()  # LoadGen's own words for an INVALID run


@fact(SERVE)
@dataclass(frozen=True)
class Served(Fact):
    """A configuration served (mode serve): every LoadGen run of every process (`runs`, each
    with its process), and what they come to. The figures (figure, server_qps, failed_above,
    why_none, server_to_offline) and the batcher's settings are the first process's; the
    seconds (serving_s, search_s) are summed over the processes."""

    scenario: str
    # the rate: Server QPS at the bound, Offline's throughput, SingleStream's 1/p90,
    # MultiStream's 8/p99 (a group of 8 samples at its p99 latency)
    figure: float | None
    runs: tuple[ServedRun, ...]  # SingleStream, Offline, then Server's search in its order
    server_qps: float | None = None  # the highest target LoadGen judged VALID at the bound
    failed_above: float | None = None  # the lowest Server target that was not
    search_s: float | None = None  # the Server search's wall time
    why_none: str = ""  # no Server target met the bound: why
    server_to_offline: float | None = None
    # The batcher's settings as served; `auto` names those the worker chose from the bound
    max_batch: int | None = None
    wait_ms: float | None = None
    auto: tuple[str, ...] = ()  # "max_batch", "batch_wait_ms"
    service_budget_ms: float | None = None  # auto max batch: (bound - wait) / 2.5
    service_ms: Mapping[str, float] = field(default_factory=dict)  # batch -> warm median ms
    serving_s: float | None = None  # the measurement: choosing, warming up, every LoadGen run
    max_batches: tuple[int, ...] = ()  # each process's max batch (auto chooses in each)
    processes: int = 1
    # A language model's (modes/serve_lm): the bounds served at and Offline's tokens/s
    ttft_bound_ms: float | None = None
    tpot_bound_ms: float | None = None
    offline_tokens_per_s: float | None = None


class _Ran(Protocol):
    """One LoadGen run as either serving path reports it (backends/serving, serving_lm)."""

    @property
    def result(self) -> LoadResult: ...

    @property
    def batches(self) -> Mapping[int, int]: ...  # batch size -> batches of that size formed


R = TypeVar("R", bound=_Ran)


class _Report(Protocol[R]):
    """What either serving path found: ServeReport, or a language model's TokenReport."""

    @property
    def runs(self) -> Mapping[str, R]: ...  # SingleStream, Offline (and MultiStream)

    @property
    def server(self) -> ServerSearch[R] | None: ...

    @property
    def server_to_offline(self) -> float | None: ...


@register_mode
class Serve(Mode):
    name = "serve"
    help = "MLPerf LoadGen's queries answered by dynamic batches (accelbench[serve])"
    probes = False  # the rate is LoadGen's, not a closed loop's step
    closed_loop = False  # no it/s or step time: one sample a process, the scenario's figure
    fixed_batch = False  # the batcher forms its batches: the label has no b
    options = (
        SCENARIO,
        LATENCY_BOUND,
        TTFT_BOUND,
        TPOT_BOUND,
        MAX_BATCH,
        BATCH_WAIT,
        PROMPT_LENGTH,
        NEW_TOKENS,
    )

    def inputs(self, spec: RunSpec, workload: Any, generator: Any) -> Any:
        """The samples the queries name, on the device: as many as the largest batch (the
        largest candidate, where the worker chooses it); a language model's, prompts."""
        if _serves_tokens(spec):
            import torch

            prompts = workload.prompt(generator, _largest(spec), PROMPT_LENGTH.of(spec))
            return prompts, torch.empty(0)
        return workload.make_batch(generator, _largest(spec))

    def build_step(self, prep: Prepared) -> Callable[[], None]:
        """Infer's step on the largest batch, not synchronized inside: the cuda_graphs lever
        captures this step, and a synchronize within a capture breaks it (and, on CUDA, every
        capture after it)."""
        return Infer.build_step(self, prep)  # type: ignore[arg-type]

    def model_facts(self, workload: Any, spec: RunSpec) -> dict[str, Any] | None:
        """A language model's answers are generations, not infer's one forward of its input
        shape: no FLOPs per sample is claimed for them (None: a classifier's, the usual)."""
        return {} if _serves_tokens(spec) else None

    def drift_spec(self, spec: RunSpec) -> RunSpec:
        """The accuracy guard compares infer's outputs on the same levers and precision: the
        model the batcher serves is built the same way, while serve's inputs hold the largest
        batch's samples, not the reference's batch."""
        return replace(spec, mode="infer", mode_args=())

    def check_args(self, spec: RunSpec, workload: Any) -> None:
        """LoadGen must be there: one line naming the extra, before any worker starts."""
        from ..backends.loadgen import loadgen

        loadgen()
        _TOKEN_SERVING["check"](spec, workload)

    def profile_note(self, spec: RunSpec) -> str:
        return (
            f"the profiled step is one batch of {_largest(spec)} (the largest the batcher may "
            "form), not a served query: serving has no step time, so the shares are of the "
            "profiled step"
        )

    def measure(self, prep: Prepared, closed_loop: Callable[[], Measurement]) -> Measurement:
        """LoadGen's scenarios instead of the closed loop: one sample, the seconds a block's
        samples take at the scenario's rate (so the rate is that figure)."""
        from ..backends.serving import forward_batches, serve, warm_up

        if _serves_tokens(prep.spec):
            return _measured(prep, _TOKEN_SERVING["serve"](prep))
        started = time.perf_counter()
        work = forward_batches(prep, graphs=bool(prep.spec.lever("cuda_graphs", False)))
        settings, record = _settings(prep.spec, work.run)
        report = serve(settings, work, warm_up(work.run, settings.max_batch))
        served = replace(served_of(settings.scenarios[0], report, served_run), **record)
        served = replace(served, serving_s=time.perf_counter() - started)
        return _measured(prep, served)

    def merge_processes(self, before: dict[str, Any], latest: dict[str, Any]) -> dict[str, Any]:
        """Every process's LoadGen runs, each marked with its process; the seconds summed."""
        first, later = Served.from_metrics(before), Served.from_metrics(latest)
        if first is None or later is None:
            return {}
        runs = (*first.runs, *(replace(r, process=first.processes) for r in later.runs))
        merged = replace(
            first,
            runs=runs,
            processes=first.processes + later.processes,
            serving_s=_sum(first.serving_s, later.serving_s),
            search_s=_sum(first.search_s, later.search_s),
            max_batches=(*first.max_batches, *later.max_batches),
        )
        return merged.to_metrics()


# How a language model is served (modes/serve_lm): it builds on this module's options and fact,
# so this module cannot import it; it installs itself at its import (modes/__init__), as
# core/modes installs its lookup into core/result
_TOKEN_SERVING: dict[str, Callable[..., Any]] = {}


def install_token_serving(
    check: Callable[[RunSpec, Any], None], serve_prompts: Callable[[Any], Served]
) -> None:
    """Called once, by modes/serve_lm: `check(spec, workload)` refuses options that do not fit
    the kind of workload; `serve_prompts(prep)` serves a language model."""
    _TOKEN_SERVING.update(check=check, serve=serve_prompts)


def _serves_tokens(spec: RunSpec) -> bool:
    """A language model's configuration: generate's new tokens are among its arguments."""
    return NEW_TOKENS.value(spec) is not None


def _measured(prep: Prepared, served: Served) -> Measurement:
    """The served figure as the configuration's one sample: the seconds a block's samples take
    at that rate; none (a failure keeping the runs made) where no figure was found."""
    from ..core.stats import Measurement

    prep.info.update(served.to_metrics())
    if not served.figure:  # the runs it made stay with the failed result
        raise MeasuredFailure(served.why_none or _invalid(served), served.to_metrics())
    block = prep.spec.batch_size * prep.spec.steps_per_block
    return Measurement(samples=(block / served.figure,))


def _sum(a: float | None, b: float | None) -> float | None:
    return None if a is None and b is None else (a or 0.0) + (b or 0.0)


def _largest(spec: RunSpec) -> int:
    from ..backends.batch_choice import CANDIDATES

    value = MAX_BATCH.value(spec)
    return max(CANDIDATES) if value == AUTO else MAX_BATCH.of(spec)


def _invalid(served: Served) -> str:
    run = next(r for r in served.runs if r.scenario == served.scenario)
    return f"LoadGen judged {served.scenario} INVALID: {', '.join(run.failed) or 'see its summary'}"


def _settings(spec: RunSpec, run_batch: Callable[[int], None]) -> tuple[Any, dict[str, Any]]:
    """The serving settings, with the batcher's chosen where they are auto (timing the model),
    and Served's fields that record them."""
    from ..backends.serving import ServeSettings

    bound_s = LATENCY_BOUND.of(spec) / 1e3
    max_batch, wait_s, record = choose_batching(spec, bound_s, run_batch)
    settings = ServeSettings(
        scenarios=(str(SCENARIO.value(spec) or "server"),),
        latency_bound_s=bound_s,
        max_batch=max_batch,
        wait_s=wait_s,
    )
    return settings, record


def choose_batching(
    spec: RunSpec,
    bound_s: float,
    run_batch: Callable[[int], None],
    timer: Callable[[Callable[[int], None], int], float] | None = None,
) -> tuple[int, float, dict[str, Any]]:
    """The batcher's largest batch and wait (s), chosen from `bound_s` where they are auto
    (the largest batch by timing `run_batch`, each size by `timer`: backends/batch_choice), and
    Served's fields that record them."""
    from ..backends import batch_choice

    wait, most = BATCH_WAIT.value(spec), MAX_BATCH.value(spec)
    wait_s = batch_choice.auto_wait_s(bound_s) if wait == AUTO else BATCH_WAIT.of(spec) / 1e3
    record: dict[str, Any] = {
        "auto": tuple(o.name for o in (MAX_BATCH, BATCH_WAIT) if o.value(spec) == AUTO)
    }
    if most == AUTO:
        budget = batch_choice.service_budget_s(bound_s, wait_s)
        choice = batch_choice.choose_max_batch(run_batch, budget, timer=timer)
        max_batch = choice.max_batch
        record["service_budget_ms"] = budget * 1e3
        record["service_ms"] = {str(size): took * 1e3 for size, took in choice.timed}
    else:
        max_batch = MAX_BATCH.of(spec)
    record.update(max_batch=max_batch, max_batches=(max_batch,), wait_ms=wait_s * 1e3)
    return max_batch, wait_s, record


def served_of(scenario: str, report: _Report[R], run: Callable[[R], ServedRun]) -> Served:
    """The fact of a report (a classifier's or a language model's), each LoadGen run behind it
    by `run` (`served_run`, or one that adds a language model's token figures to it)."""
    search = report.server
    runs = [*report.runs.values(), *(search.tried if search else ())]
    return Served(
        scenario=scenario,
        figure=_figure(scenario, report),
        runs=tuple(run(r) for r in runs),
        server_qps=search.qps if search else None,
        failed_above=search.failed_above if search else None,
        search_s=search.elapsed_s if search else None,
        why_none=search.why_none if search else "",
        server_to_offline=report.server_to_offline,
    )


def _figure(scenario: str, report: _Report[R]) -> float | None:
    """Server: its QPS at the bound(s); Offline: its throughput (a language model's: prompts/s);
    SingleStream: one over its p90; MultiStream: a group's samples over its p99."""
    from ..backends.loadgen import MULTISTREAM_SAMPLES

    if scenario == "server":
        return report.server.qps if report.server else None
    run = report.runs[scenario].result
    if not run.valid:
        return None
    if scenario == "multistream":  # a group's samples over its p99, LoadGen's metric
        return MULTISTREAM_SAMPLES / run.latency_s["99.00"]
    return run.qps if scenario == "offline" else 1.0 / run.latency_s["90.00"]


def served_run(run: _Ran) -> ServedRun:
    """One LoadGen run as the fact keeps it: LoadGen's verdict and figures, the batches formed."""
    r = run.result
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
    )
