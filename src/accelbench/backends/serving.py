"""Serving under load: the model answers MLPerf LoadGen's scenarios (backends/loadgen), its
queries batched dynamically (backends/batcher), in a worker process like every measurement.

What it finds, each from LoadGen's own runs and verdicts:
- SingleStream: one query at a time; its p90 (LoadGen's metric) and p99 latency.
- Offline: every query at once; the throughput.
- MultiStream: groups of 8 samples, one group at a time; the p99 of a group's latency.
- Server: Poisson arrivals at a target rate; the highest target whose run LoadGen judges VALID
  with its p99 within `latency_bound_s` (its latency check and its early-stopping check), found
  by bisection between 0 and Offline's throughput in at most `search_steps` runs and
  `search_budget_s` seconds. Server needs Offline (its ceiling, and the Server/Offline ratio)
  and SingleStream (one query at a time is the least any load costs: a bound below its p99 is
  one no load can meet, said instead of searched), so asking for it runs both.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .batch_choice import median_s
from .batcher import Batcher, BatchWork
from .loadgen import (
    MULTISTREAM_LEAST_LATENCY_S,
    MULTISTREAM_SAMPLES,
    SCENARIOS,
    Driver,
    LoadResult,
    LoadTest,
    read_result,
)
from .serve_checks import check_settings, scenario_runs
from .server_search import RunLimits, ServerSearch, bisect, not_found, offline

if TYPE_CHECKING:
    from ..devices import DeviceEvent
    from ..levers import Prepared

__all__ = [
    "SCENARIOS",
    "ScenarioRun",
    "ServeReport",
    "ServeSettings",
    "ServerSearch",
    "Warm",
    "forward_batches",
    "serve",
    "warm_up",
]


SINGLE_STREAM_QUERIES = 256  # its p99: the third-highest of 256
# Offline's first run expects at most this rate: LoadGen issues rate x duration samples at once,
# and a tiny model's warm batch (a 0.04 ms MLP: 3 million/s) made that millions of queries whose
# messages took minutes; a faster model is measured again at the rate it reached
# (`server_search.offline`)
OFFLINE_FIRST_QPS = 50_000.0


@dataclass(frozen=True)
class ServeSettings:
    """How to serve: checked as it is made (UsageError, one line, naming what is valid)."""

    scenarios: tuple[str, ...] = ("singlestream", "offline", "server")
    latency_bound_s: float = 0.010  # Server's p99 bound
    max_batch: int = 64  # the most queries one batch takes
    wait_s: float = 0.002  # the longest the oldest query waits for others to join its batch
    duration_s: float = 2.0  # each LoadGen run's minimum duration
    min_queries: int = 1024  # each run's minimum query count (early stopping needs >= 459)
    search_steps: int = 6  # Server: bisection runs; the result is within Offline / 2**steps
    search_budget_s: float = 150.0  # Server: no run starts that would end past this
    server_qps: float | None = None  # Server: one run at this target instead of the search
    # LoadGen in a thread of the model's process instead of a process of its own: only to
    # measure what the separate process buys (its callbacks then compete for the GIL)
    loadgen_in_process: bool = False

    def __post_init__(self) -> None:
        check_settings(self, SCENARIOS, "unknown scenario {!r}", ("latency_bound_s",))

    def runs(self) -> tuple[str, ...]:
        """The scenarios to run, in order: Server's search needs the other two first."""
        return scenario_runs(self.scenarios, SCENARIOS)


@dataclass(frozen=True)
class ScenarioRun:
    """One LoadGen run and the batch sizes the batcher formed in it (size -> count)."""

    result: LoadResult
    batches: dict[int, int]


@dataclass(frozen=True)
class ServeReport:
    settings: ServeSettings
    runs: dict[str, ScenarioRun] = field(default_factory=dict)  # SingleStream, Offline
    server: ServerSearch[ScenarioRun] | None = None

    @property
    def server_to_offline(self) -> float | None:
        """Server's QPS at the bound over Offline's throughput, on the same settings."""
        return self.server.to_offline(self.runs.get("offline")) if self.server else None


@dataclass(frozen=True)
class Warm:
    """Seconds a batch takes once warm: of one sample, and of `max_batch`; LoadGen sizes its
    SingleStream and Offline runs from them."""

    single_s: float
    full_s: float
    group_s: float = 0.0  # a MultiStream group's batch (8 samples, or max_batch if fewer)


class _Session:
    """LoadGen's process and the batcher, for one model made ready, across its runs."""

    def __init__(self, settings: ServeSettings, work: BatchWork[Any]) -> None:
        self.settings, self.work = settings, work
        self.batcher = Batcher(settings.max_batch, settings.wait_s)
        self.logs = Path(tempfile.mkdtemp(prefix="accelbench-loadgen-"))
        self.driver = Driver(self.logs, settings.loadgen_in_process)

    def run(self, test: LoadTest) -> ScenarioRun:
        logs, formed = self.driver.run(test, partial(self.batcher.serve, work=self.work))
        return ScenarioRun(read_result(logs, test), formed)

    def test(self, scenario: str, **values: Any) -> LoadTest:
        s = self.settings
        return LoadTest(
            scenario=scenario,
            min_duration_s=s.duration_s,
            min_queries=s.min_queries,
            samples=s.max_batch,
            latency_bound_s=s.latency_bound_s,
            **values,
        )


def serve(settings: ServeSettings, work: BatchWork[Any], warm: Warm) -> ServeReport:
    """Run `settings`' scenarios against `work` (n samples through the model: launched, asked
    about, synchronized), in this process; LoadGen runs in a process of its own. `warm`: the
    batches' times after warm-up, from which LoadGen's runs are sized."""
    session = _Session(settings, work)
    try:
        return _scenarios(session, warm)
    finally:
        session.driver.stop()
        shutil.rmtree(session.logs, ignore_errors=True)  # what matters of them is read


def _scenarios(session: _Session, warm: Warm) -> ServeReport:
    settings = session.settings
    runs: dict[str, ScenarioRun] = {}
    if "singlestream" in settings.runs():
        test = session.test("singlestream", expected_latency_s=warm.single_s)
        runs["singlestream"] = session.run(replace(test, min_queries=_single_queries(settings)))
    if "offline" in settings.runs():
        expected = min(OFFLINE_FIRST_QPS, settings.max_batch / warm.full_s)
        runs["offline"] = offline(
            lambda qps: session.run(session.test("offline", target_qps=qps)), expected
        )
    search = _search(session, runs) if "server" in settings.runs() else None
    if "multistream" in settings.runs():
        runs["multistream"] = session.run(_multistream(session, warm))
    return ServeReport(settings, runs, search)


def _multistream(session: _Session, warm: Warm) -> LoadTest:
    """Groups of 8 samples, each issued when the last is answered; LoadGen's figure is the p99
    of the groups' latency. Its expected latency is floored (loadgen's MULTISTREAM_LEAST_...)."""
    expected = max(MULTISTREAM_LEAST_LATENCY_S, warm.group_s)
    test = session.test("multistream", expected_latency_s=expected)
    return replace(test, samples_per_query=MULTISTREAM_SAMPLES)


def _single_queries(settings: ServeSettings) -> int:
    """SingleStream answers one query at a time, so its count is its duration: capped where
    a p99 still rests on a few late ones (LoadGen runs its minimum duration whatever the count)."""
    return min(settings.min_queries, SINGLE_STREAM_QUERIES)


def _search(session: _Session, runs: dict[str, ScenarioRun]) -> ServerSearch[ScenarioRun]:
    """Bisection over Server's target QPS, between 0 and Offline's throughput
    (backends/server_search)."""
    started = time.monotonic()
    s = session.settings
    alone = runs["singlestream"].result.latency_s["99.00"]
    if alone > s.latency_bound_s:
        why = (
            f"even one request at a time takes {alone * 1e3:.3g} ms at p99; "
            f"the bound is {s.latency_bound_s * 1e3:.3g} ms"
        )
        return ServerSearch((), None, None, time.monotonic() - started, why)
    if s.server_qps is not None:
        return _fixed(session, s.server_qps, started)
    ceiling = runs["offline"].result.qps
    limits = RunLimits(s.duration_s, s.min_queries, s.search_steps, s.search_budget_s)
    found = bisect(lambda target: session.run(session.test("server", target_qps=target)),
                   ceiling, limits, started)  # fmt: skip
    return replace(found, why_none=not_found(found, limits, ceiling, "the bound"))


def _fixed(session: _Session, target: float, started: float) -> ServerSearch[ScenarioRun]:
    """One Server run at the target the user gave: its verdict is the answer."""
    run = session.run(session.test("server", target_qps=target))
    best, failed = (run, None) if run.result.valid else (None, target)
    why = "" if best else f"LoadGen judged {target:.4g} QPS INVALID: {', '.join(run.result.failed)}"
    return ServerSearch((run,), best, failed, time.monotonic() - started, why)


def forward_batches(prep: Prepared, graphs: bool) -> BatchWork[DeviceEvent]:
    """A batch of n: the first n samples of the prepared batch through the model, under
    inference_mode and the configuration's autocast, launched with an event recorded behind
    it (asked by `done`); `finish` synchronizes the device. With `graphs`, each batch size is
    captured in a CUDA graph of its own when first asked for (LoadGen's queries are the
    samples already on the device, as its sample library loads them before a test: no copy
    from the host is timed)."""
    import torch

    from ..workloads.inputs import first_samples

    inputs, model, workload, device = prep.batch[0], prep.model, prep.workload, prep.device
    steps: dict[int, Callable[[], None]] = {}

    def step_of(size: int) -> Callable[[], None]:
        def step() -> None:
            with torch.inference_mode(), prep.autocast():
                workload.forward(model, first_samples(inputs, size))

        return device.capture_graph(step) if graphs else step

    def launch(size: int) -> DeviceEvent:
        if size not in steps:
            steps[size] = step_of(size)
        steps[size]()
        return device.record_event()

    def finish(_: DeviceEvent) -> None:
        device.synchronize()  # every queue, not only the event's: the answer's whole result

    return BatchWork(launch, lambda event: event.query(), finish)


def warm_up(run_batch: Callable[[int], None], max_batch: int, rounds: int = 2) -> Warm:
    """Run every batch size the batcher may form (each is compiled, autotuned or captured on
    its first call), then time batches of 1 and of `max_batch` (the median of 5 each)."""
    for _ in range(rounds):
        for size in range(1, max_batch + 1):
            run_batch(size)
    group = min(MULTISTREAM_SAMPLES, max_batch)
    return Warm(median_s(run_batch, 1), median_s(run_batch, max_batch), median_s(run_batch, group))
