"""backends/loadgen and backends/batcher: real MLPerf LoadGen, in its own process, driving the
dynamic batcher; what LoadGen logged is read back (its verdict, its figures, its summary)."""

from __future__ import annotations

import time
from collections import Counter

import pytest

pytest.importorskip(
    "mlperf_loadgen", reason="mlcommons-loadgen is not installed (accelbench[serve])"
)

from accelbench.backends.batcher import Batcher, BatchWork
from accelbench.backends.loadgen import Driver, LoadTest, read_result
from accelbench.errors import WorkloadError


def _served(tmp_path, test: LoadTest, batcher: Batcher, batch_s: float, in_process=False):
    """One LoadGen test answered by a batcher whose batches take `batch_s` each."""
    sizes: list[int] = []

    def run_batch(size: int) -> None:
        sizes.append(size)
        time.sleep(batch_s)

    driver = Driver(tmp_path, in_process)
    try:
        work = BatchWork.synchronous(run_batch)
        logs, formed = driver.run(test, lambda *pipes: batcher.serve(*pipes, work))
    finally:
        driver.stop()
    assert logs == tmp_path / f"01-{test.scenario}"  # each test's logs numbered in the folder
    return read_result(logs, test), Counter(formed), sizes


@pytest.mark.parametrize("in_process", [False, True], ids=["own-process", "thread"])
def test_offline_queries_are_batched_up_to_the_maximum_and_all_answered(tmp_path, in_process):
    test = LoadTest("offline", min_duration_s=0.2, min_queries=200, samples=8, target_qps=20000)
    batcher = Batcher(max_batch=8, wait_s=0.0)
    result, formed, sizes = _served(tmp_path, test, batcher, 0.001, in_process)
    assert result.valid, result.summary
    assert max(formed) == 8 and formed[8] >= len(sizes) - 1  # all full but maybe the last
    assert sum(size * count for size, count in formed.items()) == result.samples
    assert result.samples >= 200 and result.qps > 0
    assert "Result is : VALID" in result.summary


def test_a_batch_of_one_at_most_when_the_maximum_is_one(tmp_path):
    test = LoadTest("offline", min_duration_s=0.1, min_queries=50, samples=4, target_qps=5000)
    _, formed, _ = _served(tmp_path, test, Batcher(max_batch=1, wait_s=0.01), 0.0)
    assert set(formed) == {1}


def test_the_wait_bound_gathers_server_arrivals_into_batches(tmp_path):
    # 400 arrivals a second and a 50 ms wait: about 20 queries wait together
    test = LoadTest(
        "server", min_duration_s=0.5, min_queries=100, samples=8,
        latency_bound_s=1.0, target_qps=400,
    )  # fmt: skip
    _, formed, _ = _served(tmp_path, test, Batcher(max_batch=64, wait_s=0.05), 0.0)
    sizes = [size for size, count in formed.items() for _ in range(count)]
    assert sorted(sizes)[len(sizes) // 2] >= 5


def test_a_server_slower_than_its_bound_is_invalid_by_loadgen_with_the_late_queries(tmp_path):
    test = LoadTest(
        "server", min_duration_s=0.3, min_queries=100, samples=4,
        latency_bound_s=0.002, target_qps=50,
    )  # fmt: skip
    result, _, _ = _served(tmp_path, test, Batcher(max_batch=4, wait_s=0.0), 0.01)
    assert not result.valid
    assert "performance constraints (latency)" in result.failed
    assert result.late > 0 and result.latency_s["99.00"] > 0.002
    assert "Result is : INVALID" in result.summary


def test_too_few_queries_for_early_stopping_is_loadgens_verdict_not_ours(tmp_path):
    # every answer on time, yet p99 cannot be estimated from 100 queries (LoadGen needs 459)
    test = LoadTest(
        "server", min_duration_s=0.1, min_queries=100, samples=4,
        latency_bound_s=1.0, target_qps=500,
    )  # fmt: skip
    result, _, _ = _served(tmp_path, test, Batcher(max_batch=4, wait_s=0.0), 0.0)
    assert not result.valid and result.failed == ("early stopping",)
    assert result.late == 0


def test_a_loadgen_process_that_dies_is_an_end_of_file_not_a_hang(tmp_path):
    driver = Driver(tmp_path)
    driver.process.kill()
    driver.process.wait()
    with pytest.raises((EOFError, OSError)):
        work = BatchWork.synchronous(lambda size: None)
        Batcher(4, 0.0).serve(driver.requests, driver.responses, work)
    driver.stop()


def test_a_test_whose_loadgen_process_died_says_so_in_one_line(tmp_path):
    driver = Driver(tmp_path)
    driver.process.kill()
    driver.process.wait()
    work = BatchWork.synchronous(lambda size: None)
    test = LoadTest("offline", min_duration_s=0.1, min_queries=10, samples=4, target_qps=100)
    with pytest.raises(WorkloadError, match=r"^LoadGen ended early: exit code -9$"):
        driver.run(test, lambda *pipes: Batcher(4, 0.0).serve(*pipes, work))
    driver.stop()
