"""backends/serving_lm and backends/token_batcher: real MLPerf LoadGen, in its own process,
with its token latencies on, driving the language model's request loop. The generations here
sleep for known times (a prefill, then each token), so LoadGen's TTFT and TPOT have known
floors; the real model's path goes through the CLI (tests/modes/test_serve_lm.py)."""

from __future__ import annotations

import math
import time
from multiprocessing import Pipe

import pytest

from accelbench.backends.serving_lm import TokenSettings, TokenWarm, serve_tokens
from accelbench.backends.token_batcher import TokenBatcher
from accelbench.errors import UsageError

PREFILL_S, STEP_S = 0.004, 0.002


def _sleeping(calls: list[int]):
    """A generation of n prompts: the prefill, the first tokens sent, then 3 more tokens."""

    def generate(size, first=None, step=None):
        calls.append(size)
        time.sleep(PREFILL_S)
        if first is not None:
            first()
        for _ in range(3):
            time.sleep(STEP_S)
            if step is not None:
                step()

    return generate


QUICK = {"new_tokens": 4, "max_batch": 4, "wait_s": 0.001, "duration_s": 0.5}


def test_first_tokens_reach_loadgen_before_answers_and_loadgen_times_both():
    pytest.importorskip("mlperf_loadgen")
    settings = TokenSettings(
        scenarios=("server",), ttft_bound_s=0.2, tpot_bound_s=0.05, server_qps=100.0, **QUICK
    )
    calls: list[int] = []
    report = serve_tokens(settings, _sleeping(calls), TokenWarm(0.01, 0.01))
    single, offline = report.runs["singlestream"], report.runs["offline"]
    assert report.server is not None and report.server.qps == 100.0
    (server,) = report.server.tried
    assert server.result.valid, server.result.summary
    assert server.reasons == () and server.result.failed == ()
    for run in (single, server):
        # the first token is sent after the prefill: its latency is below the whole answer's
        assert PREFILL_S <= run.ttft_s["50.00"] < run.result.latency_s["50.00"]
        # TPOT: the time after the first token over the 3 tokens after it (3 steps of 2 ms)
        assert STEP_S * 0.9 <= run.tpot_s["50.00"] < run.result.latency_s["50.00"] / 3
        assert set(run.ttft_s) == set(run.tpot_s) and "99.00" in run.ttft_s
    # Offline has no first tokens; its tokens/s is LoadGen's, 4 tokens each prompt
    assert offline.ttft_s == {} and offline.result.valid, offline.result.summary
    assert offline.tokens_per_s == pytest.approx(4 * offline.result.qps, rel=0.05)
    assert max(offline.batches) == 4 and max(calls) == 4
    assert "TTFT Early Stopping Result" in server.result.summary
    assert report.server_to_offline == pytest.approx(100.0 / offline.result.qps)


def test_a_rate_past_capacity_is_invalid_with_loadgens_reason():
    pytest.importorskip("mlperf_loadgen")
    # one prompt a batch, 10 ms each: at most 100 a second; 300 arrive a second
    settings = TokenSettings(
        scenarios=("server",), ttft_bound_s=0.05, tpot_bound_s=0.05, server_qps=300.0,
        **{**QUICK, "max_batch": 1},
    )  # fmt: skip
    report = serve_tokens(settings, _sleeping([]), TokenWarm(0.01, 0.01))
    assert report.server is not None and report.server.best is None
    (server,) = report.server.tried
    assert not server.result.valid and report.server.failed_above == 300.0
    assert any(reason.startswith("TTFT constrain not met") for reason in server.reasons)
    assert "LoadGen judged 300 QPS INVALID: TTFT constrain not met" in report.server.why_none


def test_a_tpot_bound_even_one_prompt_misses_is_said_not_searched():
    pytest.importorskip("mlperf_loadgen")
    settings = TokenSettings(
        scenarios=("server",), ttft_bound_s=1.0, tpot_bound_s=0.0005, **QUICK
    )
    report = serve_tokens(settings, _sleeping([]), TokenWarm(0.01, 0.01))
    assert report.server is not None and report.server.tried == ()
    assert report.server.why_none.startswith("even one prompt at a time has a TPOT of ")
    assert report.server.why_none.endswith("ms at p99; the bound is 0.5 ms")


def test_the_batcher_sends_first_tokens_then_answers_each_batch_in_order():
    requests_in, requests_out = Pipe()
    responses_in, responses_out = Pipe()
    requests_in.send(("issue", [(10, 0), (11, 1), (12, 2), (13, 3), (14, 0)]))
    requests_in.send(("done", None))
    sizes: list[int] = []
    formed = TokenBatcher(max_batch=2, wait_s=0.0, new_tokens=5).serve(
        requests_out, responses_in, _sleeping(sizes)
    )
    sent = []
    while responses_out.poll(0):
        sent.append(responses_out.recv())
    assert sizes == [2, 2, 1] and dict(formed) == {2: 2, 1: 1}
    assert sent == [
        ("first", [10, 11]), ("tokens", [(10, 5), (11, 5)]),
        ("first", [12, 13]), ("tokens", [(12, 5), (13, 5)]),
        ("first", [14]), ("tokens", [(14, 5)]),
    ]  # fmt: skip


def test_offline_batches_send_no_first_tokens():
    requests_in, requests_out = Pipe()
    responses_in, responses_out = Pipe()
    requests_in.send(("issue", [(1, 0), (2, 1)]))
    requests_in.send(("done", None))
    TokenBatcher(4, 0.0, 3, first_tokens=False).serve(requests_out, responses_in, _sleeping([]))
    assert responses_out.recv() == ("tokens", [(1, 3), (2, 3)])
    assert not responses_out.poll(0)


def test_a_prompt_that_arrives_during_a_generation_has_waited_from_then():
    """Read between the decode steps, it has waited the whole generation (the wait bound) when
    the batch ends, so the next batch starts at once. Read only after the batch, it was stamped
    then, and the device idled another wait bound (the old loop)."""
    wait_s = 1.0
    requests_in, requests_out = Pipe()
    responses_in, _ = Pipe()
    launched: list[float] = []
    ended: list[float] = []

    def generate(size, first=None, step=None):
        launched.append(time.monotonic())
        if len(launched) == 1:
            requests_in.send(("issue", [(3, 0)]))  # arrives as the first batch starts
            for _ in range(4):  # the batch's decode steps last the wait bound
                if step is not None:
                    step()
                time.sleep(wait_s / 4)
        else:
            requests_in.send(("done", None))
        ended.append(time.monotonic())

    requests_in.send(("issue", [(1, 0), (2, 1)]))  # a full batch: it starts at once
    formed = TokenBatcher(max_batch=2, wait_s=wait_s, new_tokens=5).serve(
        requests_out, responses_in, generate
    )
    assert dict(formed) == {2: 1, 1: 1}
    assert launched[1] - ended[0] < wait_s / 2  # the old loop: wait_s


@pytest.mark.parametrize(
    ("values", "said"),
    [
        ({"scenarios": ("multistream",)}, "scenario 'multistream' cannot serve a language model"),
        ({"ttft_bound_s": 0.0}, "ttft_bound_s must be a positive number of seconds"),
        ({"tpot_bound_s": -1.0}, "tpot_bound_s must be a positive number of seconds"),
        ({"ttft_bound_s": math.nan}, "ttft_bound_s must be a positive number of seconds"),
        ({"tpot_bound_s": math.inf}, "tpot_bound_s must be a positive number of seconds"),
        ({"new_tokens": 1}, "serving needs at least 2 new tokens"),
        ({"wait_s": -0.1}, "the wait bound must be 0 s or more"),
        ({"server_qps": 0.0}, "the Server target must be a positive QPS"),
        ({"max_batch": 0}, "max_batch must be a positive integer"),
    ],
)
def test_bad_settings_are_refused_in_one_line(values, said):
    with pytest.raises(UsageError, match="^" + said.replace("(", r"\(").replace(")", r"\)")):
        TokenSettings(**values)
