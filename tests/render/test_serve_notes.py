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
