"""render/console/serve_notes: a served configuration's notes say the batcher's settings, how
auto chose them, and each process's Server figure, from the stored fact."""

from __future__ import annotations

from dataclasses import replace

from accelbench.modes.serve import Served, ServedRun
from accelbench.render.console.serve_notes import serve_notes


def _run(scenario: str, target: float, valid: bool, process: int = 0) -> ServedRun:
    return ServedRun(
        scenario=scenario, target_qps=target, valid=valid, failed=() if valid else ("latency",),
        qps=target, p50_ms=3.0, p90_ms=5.0, p99_ms=8.9 if valid else 12.0, samples=2048,
        late=0, batches={"32": 10, "48": 30, "18": 1}, summary="", process=process,
    )  # fmt: skip


def _served(runs, processes=1) -> Served:
    return Served(
        scenario="server", figure=10_546.0, runs=tuple(runs), server_qps=10_546.0,
        failed_above=10_800.0, search_s=12.3, server_to_offline=0.83, max_batch=48,
        wait_ms=0.5, auto=("max_batch", "batch_wait_ms"), service_budget_ms=3.8,
        service_ms={"1": 1.1, "48": 3.7, "64": 4.7}, processes=processes,
    )  # fmt: skip


def test_auto_batching_and_the_server_search_are_said():
    batching, server = serve_notes(_served([_run("server", 10_546.0, True)]), 10.0)
    assert batching == (
        "served with batches of at most 48 (auto: a warm batch of 48 took 3.7 ms, within "
        "(bound - wait) / 2.5 = 3.8 ms; 64 took 4.7 ms) and a wait of 0.5 ms (auto: the bound / 20)"
    )
    assert server.startswith("Server: 10,546 QPS at p99 <= 10 ms (LoadGen VALID, p99 8.9 ms)")
    assert "10,800 failed; 0.83 of Offline; 1 LoadGen run in 12.3" in server
    assert server.endswith("sizes 18-48, most often 48 (30 of 41)")


def test_several_processes_each_have_their_server_figure():
    runs = [_run("server", 10_546.0, True), _run("server", 11_000.0, False),
            _run("server", 9_900.0, True, 1), _run("server", 10_100.0, False, 1)]  # fmt: skip
    served = replace(_served(runs, processes=2), max_batches=(48, 32))
    (batching, server) = serve_notes(served, 10.0)
    assert "64 took 4.7 ms); the first process's: the processes' were 48, 32 and a wait" in batching
    assert server == (
        "Server at p99 <= 10 ms, each process's highest target LoadGen judged VALID: "
        "10,546, 9,900 QPS (4 Server runs in all); batches formed at each one's highest VALID "
        "target: sizes 18-48, most often 48 (30 of 41); sizes 18-48, most often 48 (30 of 41)"
    )


def test_several_processes_each_have_their_ratio_to_their_own_offline():
    runs = [_run("offline", 12_000.0, True), _run("server", 9_600.0, True),
            _run("offline", 13_000.0, True, 1), _run("server", 9_100.0, True, 1),
            _run("server", 9_500.0, False, 1)]  # fmt: skip
    (_, server) = serve_notes(_served(runs, processes=2), 10.0)
    whole = (9_600 * 9_100) ** 0.5 / (12_000 * 13_000) ** 0.5
    assert f"of the same process's Offline: 0.80, 0.70 ({whole:.2f} from the geometric" in server


def _token_run(scenario: str, target: float, valid: bool, **more) -> ServedRun:
    figures = {"ttft_p50_ms": 40.0, "ttft_p90_ms": 90.0, "ttft_p99_ms": 180.0,
               "tpot_p50_ms": 11.0, "tpot_p90_ms": 12.5, "tpot_p99_ms": 14.0}  # fmt: skip
    if scenario == "offline":
        figures = {}
    return replace(_run(scenario, target, valid), **{**figures, **more})


def test_a_language_model_s_notes_give_its_token_figures_and_bounds():
    runs = [
        _token_run("singlestream", 0.0, True),
        _token_run("offline", 0.0, True, qps=120.0, tokens_per_s=3840.0),
        _token_run("server", 60.0, True),
        _token_run("server", 90.0, False, reasons=("TTFT constrain not met: Reduce target QPS",)),
    ]
    served = replace(
        _served(runs), server_qps=60.0, failed_above=90.0, server_to_offline=0.5,
        ttft_bound_ms=2000.0, tpot_bound_ms=100.0, max_batch=32, service_budget_ms=760.0,
        service_ms={"32": 700.0, "48": 900.0}, wait_ms=100.0,
    )  # fmt: skip
    batching, single, offline, server = serve_notes(served, None)
    assert batching.startswith("served with batches of at most 32 (auto: a warm batch of 32 took")
    assert "within (TTFT bound - wait) / 2.5 = 760 ms" in batching
    assert batching.endswith("a wait of 100 ms (auto: the TTFT bound / 20)")
    assert single == (
        "one prompt at a time: TTFT p50/p90/p99 40.0/90.0/180 ms, TPOT 11.0/12.5/14.0 ms"
    )
    assert offline == "Offline: 120 prompts/s, 3,840 tokens/s (LoadGen VALID)"
    assert server.startswith(
        "Server: 60.0 QPS at TTFT p99 <= 2000 ms and TPOT p99 <= 100 ms (LoadGen VALID; "
        "TTFT p50/p90/p99 40.0/90.0/180 ms, TPOT 11.0/12.5/14.0 ms), 90.0 failed (LoadGen INVALID: "
        "TTFT constrain not met: Reduce target QPS); 0.50 of Offline's prompts/s; 2 LoadGen runs"
    ), server


def test_a_language_model_with_no_target_within_its_bounds_says_why():
    served = replace(
        _served([_token_run("singlestream", 0.0, True)]), server_qps=None, failed_above=None,
        why_none="even one prompt at a time has a TPOT of 14 ms at p99; the bound is 5 ms",
        ttft_bound_ms=2000.0, tpot_bound_ms=5.0, max_batch=None, search_s=None,
    )  # fmt: skip
    assert serve_notes(served, None)[-1] == (
        "Server at TTFT p99 <= 2000 ms and TPOT p99 <= 5 ms: none (even one prompt at a time "
        "has a TPOT of 14 ms at p99; the bound is 5 ms); 0 LoadGen runs"
    )
