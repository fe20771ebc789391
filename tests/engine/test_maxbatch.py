"""The largest-batch search, against a fake runner with a known memory limit."""

import pytest

from accelbench.core.result import Result, RunSpec
from accelbench.engine.maxbatch import LIMIT, find_max_batch, out_of_memory

SPEC = RunSpec("resnet50", "cuda:0", 128, 1)


def runner(fits_up_to, error_at=None, oom_status="oom", oom_error="CUDA out of memory"):
    def run(spec):
        if error_at is not None and spec.batch_size == error_at:
            return Result(spec=spec, status="error", error="RuntimeError: cuDNN failed")
        if spec.batch_size <= fits_up_to:
            return Result(spec=spec, status="ok")
        return Result(spec=spec, status=oom_status, error=oom_error)

    return run


@pytest.mark.parametrize("limit", [128, 129, 300, 1000, 1023, 4096])
def test_finds_the_exact_largest_batch_growing(limit):
    found = find_max_batch(SPEC, runner(limit))
    assert found.largest.spec.batch_size == limit
    batches = [b for b, _ in found.probes]
    assert batches[:2] == [128, 256] or limit < 256
    assert len(batches) <= 2 * limit.bit_length() + 2  # logarithmic, not linear


@pytest.mark.parametrize("limit", [1, 5, 64, 127])
def test_finds_the_exact_largest_batch_shrinking(limit):
    found = find_max_batch(SPEC, runner(limit))
    assert found.largest.spec.batch_size == limit


def test_nothing_fits():
    found = find_max_batch(SPEC, runner(0))
    assert found.largest is None and found.to_metrics()["max_batch"] == 0
    assert [b for b, _ in found.probes] == [128, 64, 32, 16, 8, 4, 2, 1]


def test_another_error_stops_the_search_and_says_why():
    found = find_max_batch(SPEC, runner(10_000, error_at=512))
    assert found.largest.spec.batch_size == 256
    assert found.stopped_by == "error: RuntimeError: cuDNN failed"


def test_the_doubling_stops_at_the_limit():
    found = find_max_batch(SPEC, runner(10**9))
    assert found.limit_reached and found.largest.spec.batch_size == LIMIT


def test_cpu_allocation_failures_count_as_out_of_memory():
    found = find_max_batch(
        SPEC,
        runner(
            200,
            oom_status="error",
            oom_error="RuntimeError: DefaultCPUAllocator: can't "
            "allocate memory: you tried to allocate 1 GB",
        ),
    )
    assert found.largest.spec.batch_size == 200
    killed = Result(spec=SPEC, status="error", error="the worker process died (killed by SIGKILL)")
    assert out_of_memory(killed)
    assert not out_of_memory(Result(spec=SPEC, status="error", error="ValueError: bad shape"))
