"""MLPerf LoadGen in a process of its own, beside the process that runs the model.

LoadGen calls back into Python for every query it issues (Server: one call per arrival). On a
lent H200 a hand-written server that held those callbacks in the process launching the model's
kernels lost its 10 ms bound to the GIL: the launch-bound forward of a batch of 1 took 4.0 ms
alone and 7.6 ms beside a thread taking the GIL 4,000 times a second (DESIGN.md, Serving). So
LoadGen lives here, in a spawned interpreter that never imports torch; the model's process
(backends/batcher) gets the queries over a pipe and sends back the ids it has answered.

LoadGen decides everything a load test means: the arrival schedule, the queries' count, the
percentiles, the verdict (VALID / INVALID and which check failed, early stopping included). This
module only sets it up and reads what it wrote (`mlperf_log_detail.txt`, `mlperf_log_summary.txt`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import socket
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from ..errors import WorkloadError, require

__all__ = [
    "SCENARIOS",
    "Answer",
    "Driver",
    "LoadResult",
    "LoadTest",
    "loadgen",
    "read_detail",
    "read_result",
]

# LoadGen's scenarios that accelbench runs, by their names on the command line
SCENARIOS = ("singlestream", "offline", "server", "multistream")
# MultiStream: each query is a group of this many samples, the next issued when it is answered
MULTISTREAM_SAMPLES = 8
# LoadGen sizes MultiStream's pre-generated queries from the expected latency: an estimate too
# small (a tiny model's warm batch, microseconds) made it allocate until memory ran out
MULTISTREAM_LEAST_LATENCY_S = 1e-4
_PROCESS = Path(__file__).with_name("loadgen_process.py")
# A request loop (backends/batcher, token_batcher): (requests, responses) -> batches formed by
# size, returned once LoadGen says the test is done
Answer = Callable[[Connection, Connection], Counter[int]]
# runpy leaves sys.path as it is for a file (`python FILE` would put this folder first, where
# onnxruntime.py would stand for the real package)
_RUN = "import runpy, sys; runpy.run_path(sys.argv[1], run_name='__main__')"
# The percentiles LoadGen writes for every scenario, as keys of its detail log
PERCENTILES = ("50.00", "90.00", "95.00", "97.00", "99.00", "99.90")


def loadgen() -> Any:
    """The mlperf_loadgen module, or one line naming the extra that installs it."""
    return require("mlperf_loadgen", "serve", "serving under load", package="mlcommons-loadgen")


@dataclass(frozen=True)
class LoadTest:
    """One LoadGen run's settings (seconds here; LoadGen takes ns and ms)."""

    scenario: str
    min_duration_s: float
    min_queries: int
    samples: int  # the query sample library's performance set: indices 0..samples-1
    latency_bound_s: float = 0.0  # Server: the p99 target; LoadGen's verdict checks it
    target_qps: float = 0.0  # Server: the Poisson arrival rate; Offline: the expected rate
    expected_latency_s: float = 0.0  # Single/MultiStream: how LoadGen sizes its queries
    samples_per_query: int = 1  # MultiStream: its groups' size
    # A language model's test (backends/serving_lm): LoadGen times each query's first token
    # and the tokens after it; Server's verdict checks their p99 against these bounds
    tokens: bool = False
    ttft_bound_s: float = 0.0
    tpot_bound_s: float = 0.0


@dataclass(frozen=True)
class LoadResult:
    """What LoadGen wrote about one run: its figures, its verdict and its summary, verbatim."""

    scenario: str
    target_qps: float
    valid: bool
    failed: tuple[str, ...]  # LoadGen's checks that failed (empty when VALID)
    qps: float  # completed samples per second (Offline: its throughput)
    latency_s: dict[str, float]  # percentile ("99.00") -> seconds, LoadGen's own
    queries: int
    samples: int  # queries x samples per query (Offline: one query of them all)
    late: int  # queries over the latency bound (Server), LoadGen's count
    errors: int
    summary: str


def read_result(logs: Path, test: LoadTest) -> LoadResult:
    """The run LoadGen logged in `logs`: its detail log's figures, and its summary text."""
    detail = _detail(logs / "mlperf_log_detail.txt")
    checks = {
        "performance constraints (latency)": detail.get("result_perf_constraints_met"),
        "minimum duration": detail.get("result_min_duration_met"),
        "minimum query count": detail.get("result_min_queries_met"),
        "early stopping": detail.get("early_stopping_met"),
    }
    rate = detail.get("result_completed_samples_per_sec", detail.get("result_samples_per_second"))
    return LoadResult(
        scenario=test.scenario,
        target_qps=test.target_qps,
        valid=detail.get("result_validity") == "VALID",
        failed=tuple(name for name, met in checks.items() if met is False),
        qps=float(rate or 0.0),
        latency_s={p: detail[f"result_{p}_percentile_latency_ns"] / 1e9 for p in PERCENTILES},
        queries=int(detail.get("result_query_count", 0)),
        samples=int(detail.get("result_query_count", 0))
        * int(detail.get("generated_samples_per_query", 1)),
        late=int(detail.get("result_overlatency_query_count", 0)),
        errors=int(detail.get("num_errors", 0)),
        summary=(logs / "mlperf_log_summary.txt").read_text(errors="replace"),
    )


def read_detail(logs: Path) -> dict[str, Any]:
    """Every key LoadGen's detail log in `logs` holds (the token figures: backends/serving_lm)."""
    return _detail(logs / "mlperf_log_detail.txt")


def _detail(path: Path) -> dict[str, Any]:
    """The detail log's `:::MLLOG {json}` lines as key -> value (the last one of a key wins)."""
    values: dict[str, Any] = {}
    for line in path.read_text(errors="replace").splitlines():
        if line.startswith(":::MLLOG "):
            entry = json.loads(line[len(":::MLLOG ") :])
            values[entry["key"]] = entry["value"]
    return values


class Driver:
    """The LoadGen process, seen from the model's: start it, run tests one after another (the
    model's process answering meanwhile, `backends/batcher`), stop it.

    It is a fresh interpreter running `loadgen_process.py` by its path (importing it through
    the package would import torch), not a multiprocessing child: a fork would copy torch's
    threads, and spawn would run the caller's main module again. Two socket pairs carry the
    queries and the answers; its working directory is `logs` (nothing there shadows a module)
    and its standard error goes there, so that a failure can be told in one line."""

    def __init__(self, logs: Path, in_process: bool = False) -> None:
        self.logs, self.tests = logs, 0  # each test's logs in a numbered folder of `logs`
        self.stderr = logs / "loadgen-stderr.txt"
        self.process: subprocess.Popen[bytes] | None = None
        self.thread: threading.Thread | None = None
        ours, theirs = zip(*(socket.socketpair() for _ in range(2)), strict=True)
        if in_process:
            self._thread(theirs)
        else:
            self._process(theirs, logs)
        self.requests = Connection(ours[0].detach())  # queries: LoadGen -> model
        self.responses = Connection(ours[1].detach())  # answers: model -> LoadGen

    def _process(self, theirs: tuple[socket.socket, ...], logs: Path) -> None:
        with self.stderr.open("wb") as errors:
            self.process = subprocess.Popen(
                [sys.executable, "-c", _RUN, str(_PROCESS), *(str(s.fileno()) for s in theirs)],
                pass_fds=[s.fileno() for s in theirs],
                cwd=logs,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=errors,
            )
        for end in theirs:
            end.close()  # its death then reads as EOFError here

    def _thread(self, theirs: tuple[socket.socket, ...]) -> None:
        """LoadGen in a thread of this process, its callbacks competing with the model's
        kernel launches for the GIL: only to measure what the process of its own buys."""
        from .loadgen_process import drive

        ends = [Connection(end.detach()) for end in theirs]
        self.thread = threading.Thread(target=drive, args=ends, daemon=True)
        self.thread.start()

    def start(self, test: LoadTest, logs: Path) -> None:
        """Begin `test`; its queries arrive on `requests` until ("done", None)."""
        self.responses.send(("test", dataclasses.asdict(test), str(logs)))

    def run(self, test: LoadTest, answer: Answer) -> tuple[Path, dict[int, int]]:
        """Run `test`, `answer` taking its queries from `requests` and answering them on
        `responses` until LoadGen says it is done; the folder LoadGen logged it in, and the
        batches of each size `answer` formed. LoadGen's process ending early is one line."""
        self.tests += 1
        logs = self.logs / f"{self.tests:02d}-{test.scenario}"
        logs.mkdir()
        try:
            self.start(test, logs)
            formed = answer(self.requests, self.responses)
        except (EOFError, OSError):
            raise WorkloadError(f"LoadGen ended early: {self.why_ended()}") from None
        return logs, dict(sorted(formed.items()))

    def why_ended(self) -> str:
        """Its last line of standard error, or its exit code, for a process that ended early."""
        if self.process is None:
            return "LoadGen's thread ended"
        lines = self.stderr.read_text(errors="replace").strip().splitlines()
        return lines[-1] if lines else f"exit code {self.process.poll()}"

    def stop(self, timeout: float = 10.0) -> None:
        with contextlib.suppress(OSError):  # it has ended already
            self.responses.send(("quit",))
        if self.thread is not None:
            self.thread.join(timeout)
        elif self.process is not None:
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.requests.close()
        self.responses.close()
