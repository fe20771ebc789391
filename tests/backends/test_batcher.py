"""backends/batcher: while the device runs a batch, the arrivals are read from the pipe, and no
answer is sent before its batch has finished. Real MLPerf LoadGen sends the queries; the device
is a fake whose batch takes a fixed time after its launch returns (as a GPU's does), and the
pipe's ends are wrapped to log, in order, when each message was taken and each answer sent."""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field

import pytest

pytest.importorskip(
    "mlperf_loadgen", reason="mlcommons-loadgen is not installed (accelbench[serve])"
)

from accelbench.backends.batcher import Batcher, BatchWork
from accelbench.backends.loadgen import Driver, LoadTest, read_result


@dataclass
class _Log:
    """What happened, in order, with time.monotonic() of each: ("launch", batch number),
    ("finish", batch number), ("take", query ids), ("send", query ids)."""

    events: list[tuple[str, object, float]] = field(default_factory=list)

    def add(self, what: str, value: object) -> None:
        self.events.append((what, value, time.monotonic()))

    def of(self, what: str) -> list[tuple[object, float]]:
        return [(value, at) for kind, value, at in self.events if kind == what]


class _Device:
    """A batch runs for `batch_s` after its launch returns; done() only asks the clock."""

    def __init__(self, log: _Log, batch_s: float) -> None:
        self.log, self.batch_s, self.count = log, batch_s, 0

    def launch(self, size: int) -> tuple[int, float]:
        self.count += 1
        self.log.add("launch", self.count)
        return self.count, time.monotonic() + self.batch_s

    def done(self, handle: tuple[int, float]) -> bool:
        return time.monotonic() >= handle[1]

    def finish(self, handle: tuple[int, float]) -> None:
        time.sleep(max(0.0, handle[1] - time.monotonic()))
        self.log.add("finish", handle[0])


class _Requests:
    """The queries' end of the pipe, logging what each recv() took."""

    def __init__(self, inner, log: _Log) -> None:
        self.inner, self.log = inner, log

    def poll(self, timeout: float = 0.0) -> bool:
        return self.inner.poll(timeout)

    def fileno(self) -> int:
        return self.inner.fileno()

    def recv(self):
        message = self.inner.recv()
        if message[0] != "done":
            self.log.add("take", [query_id for query_id, _ in message[1]])
        return message


class _Responses:
    def __init__(self, inner, log: _Log) -> None:
        self.inner, self.log = inner, log

    def send(self, message) -> None:
        self.log.add("send", list(message[1]))
        self.inner.send(message)


def _serve(tmp_path, test: LoadTest, batcher: Batcher, batch_s: float, in_process=False):
    log = _Log()
    device = _Device(log, batch_s)
    driver = Driver(tmp_path, in_process)
    try:
        logs = tmp_path / "run"
        logs.mkdir()
        driver.start(test, logs)
        work = BatchWork(device.launch, device.done, device.finish)
        formed = batcher.serve(_Requests(driver.requests, log), _Responses(driver.responses, log),
                               work)  # fmt: skip
    finally:
        driver.stop()
    return read_result(logs, test), formed, log


def _running(log: _Log) -> list[tuple[float, float]]:
    """Each batch's (launch, finish) times."""
    finished = dict(log.of("finish"))
    return [(at, finished[number]) for number, at in log.of("launch")]


SERVER = LoadTest("server", min_duration_s=0.5, min_queries=500, samples=8,
                  latency_bound_s=1.0, target_qps=800)  # fmt: skip


@pytest.mark.parametrize("in_process", [False, True], ids=["own-process", "thread"])
def test_arrivals_are_taken_while_the_device_runs_a_batch(tmp_path, in_process):
    # 800 arrivals a second, batches of 5 ms whatever their size: the device is nearly always
    # busy, so most queries arrive while a batch runs; reading them only after it had
    # finished (the batcher before) took none of them during one
    result, formed, log = _serve(tmp_path, SERVER, Batcher(64, 0.0), 0.005, in_process)
    assert result.valid, result.summary
    running = _running(log)
    taken = [at for _, at in log.of("take")]
    during = [at for at in taken if any(start < at < end for start, end in running)]
    assert len(during) >= 0.5 * len(taken), (len(during), len(taken))
    assert sum(size * count for size, count in formed.items()) == result.samples


def test_no_answer_is_sent_before_its_batch_has_finished_and_each_is_its_batchs(tmp_path):
    _, _, log = _serve(tmp_path, SERVER, Batcher(64, 0.0), 0.005)
    order = [(kind, value) for kind, value, _ in log.events if kind != "take"]
    # launch k, finish k, send k's queries: one batch in flight, answered after its end
    kinds = [kind for kind, _ in order]
    assert kinds == ["launch", "finish", "send"] * (len(kinds) // 3)
    taken = [query_id for ids, _ in log.of("take") for query_id in ids]
    sent = [query_id for ids, _ in log.of("send") for query_id in ids]
    assert sent == taken  # first come, first answered; every query once


def test_queries_read_during_a_batch_have_waited_from_then_so_the_next_starts_at_once(tmp_path):
    # batches of 20 ms, a 10 ms wait, 500 arrivals a second: when a batch ends, its first
    # arrival has waited most of 20 ms, so the next batch starts without the wait; stamped
    # only after the batch (the batcher before) they waited the 10 ms again, the device idle
    test = LoadTest("server", min_duration_s=0.5, min_queries=200, samples=8,
                    latency_bound_s=1.0, target_qps=500)  # fmt: skip
    _, _, log = _serve(tmp_path, test, Batcher(64, 0.010), 0.020)
    running = _running(log)
    idle = [start - end for (_, end), (start, _) in zip(running, running[1:], strict=False)]
    assert statistics.median(idle) < 0.004, sorted(idle)


def test_a_lone_query_waits_the_wait_bound_not_a_whole_millisecond(tmp_path):
    # one query at a time and a 0.3 ms wait: each batch is launched about 0.3 ms after its
    # query was taken (waiting through the pipe's poll, rounded up to whole milliseconds,
    # took 1.1 ms)
    test = LoadTest("singlestream", min_duration_s=0.2, min_queries=100, samples=8,
                    expected_latency_s=0.001)  # fmt: skip
    _, formed, log = _serve(tmp_path, test, Batcher(8, 0.0003), 0.0005)
    assert set(formed) == {1}
    taken = [at for _, at in log.of("take")]
    launched = [at for _, at in log.of("launch")]
    waited = [start - at for at, start in zip(taken, launched, strict=True)]
    assert 0.0003 <= statistics.median(waited) < 0.0008, sorted(waited)
