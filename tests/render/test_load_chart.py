"""render/load_chart: a served configuration's Server runs drawn as latency against load (p50,
p99, the bound), every process's runs, and the HTML report carrying the chart."""

from __future__ import annotations

from dataclasses import replace

from accelbench.core.result import Result, RunSpec
from accelbench.core.stats import Measurement
from accelbench.modes.serve import Served, ServedRun
from accelbench.render import html_report
from accelbench.render.load_chart import FIRST_TOKEN, PER_TOKEN, latency_chart, load_series

ARGS = (("latency_bound_ms", 10.0), ("max_batch", "auto"), ("scenario", "server"))


def _run(scenario: str, target: float, p99: float, process: int = 0) -> ServedRun:
    return ServedRun(
        scenario=scenario, target_qps=target, valid=p99 <= 10, failed=(), qps=target,
        p50_ms=p99 / 2, p90_ms=p99 * 0.8, p99_ms=p99, samples=2048, late=0, batches={"8": 3},
        summary="", process=process,
    )  # fmt: skip


def _served_result(runs: list[ServedRun], workload: str = "resnet50") -> Result:
    served = Served(scenario="server", figure=5000.0, runs=tuple(runs), server_qps=5000.0)
    return Result(
        spec=RunSpec(workload, "cuda:0", 64, 1, mode="serve", mode_args=ARGS),
        status="ok",
        measurement=Measurement((0.0128,)),
        metrics=served.to_metrics(),
        environment={"host": "h", "machine": "h-1"},
    )


def test_server_runs_are_points_by_target_with_the_bound_and_other_scenarios_left_out():
    runs = [
        _run("singlestream", 0.0, 3.0),
        _run("offline", 0.0, 900.0),
        _run("server", 6000.0, 14.0),
        _run("server", 3000.0, 6.0),
        _run("server", 4500.0, 8.0, process=1),
    ]
    ((name, (bound, points)),) = load_series([_served_result(runs)]).items()
    assert name == "resnet50: h-1/cuda:0 serve fp32 server p99<=10 mb=auto" and bound == 10.0
    assert [(p.target_qps, p.p99_ms, p.valid, p.process) for p in points] == [
        (3000.0, 6.0, True, 0),
        (4500.0, 8.0, True, 1),
        (6000.0, 14.0, False, 0),
    ]
    assert [p.p50_ms for p in points] == [3.0, 4.0, 7.0]


def test_the_chart_is_a_png_and_the_report_carries_it():
    result = _served_result([_run("server", 3000.0, 6.0), _run("server", 6000.0, 14.0)])
    png = latency_chart([result])
    assert png is not None and png.startswith(b"\x89PNG\r\n\x1a\n")
    page = html_report([result])
    assert "Serving: latency against load" in page


def test_no_server_run_draws_no_chart():
    offline_only = _served_result([_run("offline", 0.0, 900.0)])
    closed_loop = Result(spec=RunSpec("mlp", "cpu", 8, 1), status="ok",
                         measurement=Measurement((0.1, 0.1)))  # fmt: skip
    assert latency_chart([offline_only, closed_loop]) is None
    assert "Serving: latency against load" not in html_report([offline_only, closed_loop])


def _lm_result() -> Result:
    """gpt2's Server search: two runs, with LoadGen's token figures and no answer bound."""
    runs = tuple(
        replace(
            _run("server", target, 300.0), valid=ok, ttft_p50_ms=ttft / 2, ttft_p99_ms=ttft,
            tpot_p50_ms=tpot / 2, tpot_p99_ms=tpot,
        )  # fmt: skip
        for target, ttft, tpot, ok in ((4.0, 900.0, 40.0, True), (8.0, 2600.0, 60.0, False))
    )
    served = Served(scenario="server", figure=4.0, runs=runs, server_qps=4.0)
    args = (("max_batch", "auto"), ("scenario", "server"), ("tpot_bound_ms", 100.0),
            ("ttft_bound_ms", 2000.0))  # fmt: skip
    return Result(
        spec=RunSpec("gpt2", "cuda:0", 1, 1, mode="serve", mode_args=args),
        status="ok",
        measurement=Measurement((0.25,)),
        metrics=served.to_metrics(),
        environment={"host": "h", "machine": "h-1"},
    )


def test_a_language_model_is_drawn_on_its_two_bounds_not_the_answer_latency():
    lm = _lm_result()
    assert load_series([lm]) == {}  # no answer bound: a classifier's panel leaves it out
    ((_, (ttft_bound, ttft)),) = load_series([lm], FIRST_TOKEN).items()
    ((_, (tpot_bound, tpot)),) = load_series([lm], PER_TOKEN).items()
    assert (ttft_bound, tpot_bound) == (2000.0, 100.0)
    assert [(p.target_qps, p.p50_ms, p.p99_ms, p.valid) for p in ttft] == [
        (4.0, 450.0, 900.0, True),
        (8.0, 1300.0, 2600.0, False),
    ]
    assert [p.p99_ms for p in tpot] == [40.0, 60.0]
    png = latency_chart([lm])
    assert png is not None and png.startswith(b"\x89PNG\r\n\x1a\n")
    assert "Serving: latency against load" in html_report([lm])


def test_a_classifier_and_a_language_model_share_one_chart_of_three_panels():
    import io

    from matplotlib.image import imread

    classifier = _served_result([_run("server", 3000.0, 6.0)])
    heights = [
        imread(io.BytesIO(latency_chart(results) or b"")).shape[0]
        for results in ([classifier], [classifier, _lm_result()])
    ]
    assert heights[1] > 2.5 * heights[0]  # one panel, then three of the same size
