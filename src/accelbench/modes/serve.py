"""Mode "serve": the model answers MLPerf LoadGen's queries, batched dynamically
(backends/serving). Its rate is the scenario's figure: Server, the highest target QPS whose p99
LoadGen judges within the bound; Offline, the throughput; SingleStream, one over its p90.
Every LoadGen run behind it, with LoadGen's verdict and summary, is kept as the fact "serve"."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..core.facts import Fact, fact
from ..core.mode_options import Count, ModeOption
from ..core.modes import Mode, register_mode
from ..core.result import RunSpec, Value
from ..errors import WorkloadError
from .infer import Infer

if TYPE_CHECKING:
    from ..backends.serving import ScenarioRun, ServeReport
    from ..core.stats import Measurement
    from ..levers import Prepared

__all__ = ["SERVE", "BATCH_WAIT", "LATENCY_BOUND", "MAX_BATCH", "SCENARIO", "Serve", "Served"]

SERVE = "serve"


@dataclass(frozen=True)
class Milliseconds(ModeOption):
    """A time in milliseconds: finite, above `least` (or at it, where `zero` is allowed)."""

    single_metavar: str = "MS"
    zero: bool = False

    def parse(self, word: str) -> Value:
        try:
            number = float(word)
        except ValueError:
            raise ValueError(f"{self.name}: {word!r} is not a number of milliseconds") from None
        self.check(number)
        return number

    def word(self, value: Value) -> str:
        return f"{value:g}" if isinstance(value, float) else str(value)

    def check(self, value: Any) -> None:
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if not (number and math.isfinite(value) and (value >= 0 if self.zero else value > 0)):
            least = "0 or more" if self.zero else "more than 0"
            raise ValueError(f"{self.name} must be a number of milliseconds {least}, not {value!r}")

    def of(self, spec: RunSpec) -> float:
        value = self.value(spec)
        if not isinstance(value, (int, float)):
            raise ValueError(f"{spec.mode} needs {self.name}; the configuration has none")
        return float(value)


@dataclass(frozen=True)
class Scenario(ModeOption):
    def label(self, value: Value) -> str:
        return str(value)


SCENARIO = Scenario(
    "scenario",
    option="--scenarios",
    single="--scenario",
    help="LoadGen scenario: server (the highest QPS within --latency-bounds at p99; runs "
    "singlestream and offline too), offline (throughput), singlestream (p90 latency)",
    words=("server", "offline", "singlestream"),
    default="server",
)
LATENCY_BOUND = Milliseconds(
    "latency_bound_ms",
    option="--latency-bounds",
    single="--latency-bound",
    help="Server's p99 latency bound, in ms (default: 10)",
    prefix="p99<=",
    default=10.0,
)
MAX_BATCH = Count(
    "max_batch",
    option="--max-batches",
    single="--max-batch",
    help="the most queries one batch takes (default: 64)",
    prefix="mb",
    default=64,
)
BATCH_WAIT = Milliseconds(
    "batch_wait_ms",
    option="--batch-waits",
    single="--batch-wait",
    help="the longest the oldest query waits for others to join its batch, in ms (default: 2)",
    prefix="w",
    default=2.0,
    zero=True,
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


@fact(SERVE)
@dataclass(frozen=True)
class Served(Fact):
    """A configuration served (mode serve): every LoadGen run, and what they come to."""

    scenario: str
    figure: float | None  # the rate: Server QPS at the bound, Offline's throughput, 1/p90
    runs: tuple[ServedRun, ...]  # SingleStream, Offline, then Server's search in its order
    server_qps: float | None = None  # the highest target LoadGen judged VALID at the bound
    failed_above: float | None = None  # the lowest Server target that was not
    search_s: float | None = None  # the Server search's wall time
    why_none: str = ""  # no Server target met the bound: why
    server_to_offline: float | None = None


@register_mode
class Serve(Mode):
    name = "serve"
    help = "MLPerf LoadGen's queries answered by dynamic batches (accelbench[serve])"
    probes = False  # the rate is LoadGen's, not a closed loop's step
    closed_loop = False  # no it/s or step time: one sample a process, the scenario's figure
    options = (SCENARIO, LATENCY_BOUND, MAX_BATCH, BATCH_WAIT)

    def inputs(self, spec: RunSpec, workload: Any, generator: Any) -> Any:
        """The samples the queries name, on the device: as many as the largest batch."""
        return workload.make_batch(generator, MAX_BATCH.of(spec))

    def build_step(self, prep: Prepared) -> Callable[[], None]:
        """Infer's step on the largest batch, not synchronized inside: the cuda_graphs lever
        captures this step, and a synchronize within a capture breaks it (and, on CUDA, every
        capture after it)."""
        return Infer.build_step(self, prep)  # type: ignore[arg-type]

    def check_args(self, spec: RunSpec, workload: Any) -> None:
        """LoadGen must be there: one line naming the extra, before any worker starts."""
        from ..backends.loadgen import loadgen

        loadgen()

    def measure(self, prep: Prepared, closed_loop: Callable[[], Measurement]) -> Measurement:
        """LoadGen's scenarios instead of the closed loop: one sample, the seconds a block's
        samples take at the scenario's rate (so the rate is that figure)."""
        from ..backends.serving import forward_batches, serve, warm_up
        from ..core.stats import Measurement

        settings = _settings(prep.spec)
        run_batch = forward_batches(prep, graphs=bool(prep.spec.lever("cuda_graphs", False)))
        report = serve(settings, run_batch, warm_up(run_batch, settings.max_batch))
        served = _served(settings.scenarios[0], report)
        prep.info.update(served.to_metrics())
        if not served.figure:
            raise WorkloadError(served.why_none or _invalid(served))
        block = prep.spec.batch_size * prep.spec.steps_per_block
        return Measurement(samples=(block / served.figure,))


def _invalid(served: Served) -> str:
    run = next(r for r in served.runs if r.scenario == served.scenario)
    return f"LoadGen judged {served.scenario} INVALID: {', '.join(run.failed) or 'see its summary'}"


def _settings(spec: RunSpec) -> Any:
    from ..backends.serving import ServeSettings

    return ServeSettings(
        scenarios=(str(SCENARIO.value(spec) or "server"),),
        latency_bound_s=LATENCY_BOUND.of(spec) / 1e3,
        max_batch=MAX_BATCH.of(spec),
        wait_s=BATCH_WAIT.of(spec) / 1e3,
    )


def _served(scenario: str, report: ServeReport) -> Served:
    search = report.server
    runs = [*report.runs.values(), *(search.tried if search else ())]
    return Served(
        scenario=scenario,
        figure=_figure(scenario, report),
        runs=tuple(_run(run) for run in runs),
        server_qps=search.qps if search else None,
        failed_above=search.failed_above if search else None,
        search_s=search.elapsed_s if search else None,
        why_none=search.why_none if search else "",
        server_to_offline=report.server_to_offline,
    )


def _figure(scenario: str, report: ServeReport) -> float | None:
    if scenario == "server":
        return report.server.qps if report.server else None
    run = report.runs[scenario].result
    if not run.valid:
        return None
    return run.qps if scenario == "offline" else 1.0 / run.latency_s["90.00"]


def _run(run: ScenarioRun) -> ServedRun:
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
