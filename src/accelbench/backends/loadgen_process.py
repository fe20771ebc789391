"""The LoadGen process (started by `loadgen.Driver`, run by its path): MLPerf LoadGen's tests,
one after another, their queries sent to the model's process and its answers handed back.

It imports nothing of accelbench, so no torch: the model's process holds the kernels, this one
LoadGen's callbacks. Argument: the descriptors of its two socket ends (queries out, answers
in). Each test arrives as a plain dict (`loadgen.LoadTest`'s fields) with the folder for its logs.
"""

from __future__ import annotations

import sys
import threading
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import mlperf_loadgen as lg

_LOADGEN_NAMES = {
    "singlestream": "SingleStream",
    "offline": "Offline",
    "server": "Server",
    "multistream": "MultiStream",
}
# A path that does not exist: given none, LoadGen reads ./audit.config from the working
# directory when one is there, and that file changes the test (a compliance audit's settings).
_NO_AUDIT = "accelbench-no-audit.config"


def drive(requests: Connection, responses: Connection) -> None:
    """The LoadGen process's main thread: answers from the model reach LoadGen from here; each
    test runs in a thread of its own (LoadGen's StartTest blocks until the test is over)."""
    running: threading.Thread | None = None
    while True:
        message = responses.recv()
        if message[0] == "answered":
            lg.QuerySamplesComplete([lg.QuerySampleResponse(i, 0, 0) for i in message[1]])
        elif message[0] == "first":  # a language model's first tokens (backends/serving_lm)
            lg.FirstTokenComplete([lg.QuerySampleResponse(i, 0, 0, 1) for i in message[1]])
        elif message[0] == "tokens":  # its whole answers: (id, tokens made) each
            lg.QuerySamplesComplete([lg.QuerySampleResponse(i, 0, 0, n) for i, n in message[1]])
        elif message[0] == "test":
            running = threading.Thread(target=_test, args=(message[1], message[2], requests))
            running.start()
        else:  # "quit"
            if running is not None:
                running.join()
            return


def _test(test: dict[str, Any], logs: str, requests: Connection) -> None:
    """One LoadGen run; its issue callback forwards each query's (id, sample index)."""

    def issue(samples: Any) -> None:
        requests.send(("issue", [(s.id, s.index) for s in samples]))

    sut = lg.ConstructSUT(issue, lambda: None)
    qsl = lg.ConstructQSL(test["samples"], test["samples"], lambda _: None, lambda _: None)
    log = lg.LogSettings()
    log.log_output.outdir = logs
    log.log_output.copy_summary_to_stdout = False
    try:
        lg.StartTestWithLogSettings(sut, qsl, _settings(test), log, str(Path(logs) / _NO_AUDIT))
    finally:
        lg.DestroyQSL(qsl)
        lg.DestroySUT(sut)
        requests.send(("done", None))


def _settings(test: dict[str, Any]) -> Any:
    settings = lg.TestSettings()
    settings.scenario = getattr(lg.TestScenario, _LOADGEN_NAMES[test["scenario"]])
    settings.mode = lg.TestMode.PerformanceOnly
    settings.min_duration_ms = max(1, round(test["min_duration_s"] * 1000))
    settings.min_query_count = test["min_queries"]
    if test["scenario"] == "server":
        settings.server_target_qps = test["target_qps"]
        settings.server_target_latency_ns = round(test["latency_bound_s"] * 1e9)
    elif test["scenario"] == "offline":
        settings.offline_expected_qps = test["target_qps"]
    elif test["scenario"] == "multistream":  # the values arrive set (loadgen.LoadTest's maker)
        settings.multi_stream_expected_latency_ns = round(test["expected_latency_s"] * 1e9)
        settings.multi_stream_samples_per_query = test["samples_per_query"]
    else:
        latency_ns = round(test["expected_latency_s"] * 1e9)
        settings.single_stream_expected_latency_ns = max(1, latency_ns)
    if test.get("tokens"):  # LoadGen's token latencies: TTFT and TPOT, in ns
        settings.use_token_latencies = True
        settings.ttft_latency = round(test["ttft_bound_s"] * 1e9)
        settings.tpot_latency = round(test["tpot_bound_s"] * 1e9)
    return settings


if __name__ == "__main__":  # the LoadGen process: its two socket ends' descriptors
    drive(Connection(int(sys.argv[-2])), Connection(int(sys.argv[-1])))
