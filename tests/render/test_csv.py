"""`results export --format csv`: every figure the console shows is a column (issue 27 item 11)."""

from __future__ import annotations

import csv
import io

import pytest

from accelbench.analysis.facts import ACHIEVED_FLOPS, FLOPS_PER_SAMPLE, GENERATION, MFU
from accelbench.analysis.verdict import VERDICT
from accelbench.core.result import Result, RunSpec
from accelbench.core.stats import Measurement
from accelbench.devices.power import JOULES_PER_SAMPLE, POWER, SAMPLES_PER_S_PER_WATT
from accelbench.engine.facts import LATENCY, PARAMETER_COUNT, PARAMETERS
from accelbench.render.results_csv import CSV_FIGURES, results_csv


def _row(result: Result) -> dict[str, str]:
    (row,) = csv.DictReader(io.StringIO(results_csv([result])))
    return row


def _inference() -> Result:
    samples = tuple(0.1 * (1 + 0.01 * i) for i in range(10))
    metrics = {
        PARAMETERS: 62_006,
        FLOPS_PER_SAMPLE: 1.3e6,
        ACHIEVED_FLOPS: 2.6e9,
        MFU: 0.0125,
        LATENCY: {
            "batch_size": 1, "samples": 3, "p50_s": 0.002, "p90_s": 0.003, "p99_s": None,
            "steps_s": [0.002, 0.002, 0.003],
        },
        POWER: {"average_watts": 40.0, "joules": 4.0, "seconds": 0.1, "source": "RAPL"},
        JOULES_PER_SAMPLE: 0.25,
        SAMPLES_PER_S_PER_WATT: 4.0,
        VERDICT: {"kind": "launch-bound", "explanation": "4x the batch took 1.07x"},
    }  # fmt: skip
    return Result(
        spec=RunSpec("seed-cnn", "cpu", 64, 20, mode="infer"),
        status="ok",
        measurement=Measurement(samples, warmup=(0.5, 0.2)),
        peak_memory=123_456_789,
        peak_memory_meaning="peak RSS of the process during the run",
        metrics=metrics,
    )


def test_every_figure_of_the_console_is_a_column():
    r = _inference()
    row = _row(r)
    m = r.measurement
    assert m is not None and r.samples_per_second is not None
    per = r.samples_per_block
    assert float(row["samples_per_s_median"]) == r.samples_per_second
    assert float(row["samples_per_s_ci95_low"]) == pytest.approx(m.rate.ci_low * per)
    assert float(row["samples_per_s_ci95_high"]) == pytest.approx(m.rate.ci_high * per)
    assert float(row["samples_per_s_iqr"]) == pytest.approx(m.rate.iqr * per)
    assert float(row["step_time_s"]) == pytest.approx(m.time.median / r.spec.steps_per_block)
    assert float(row["first_it_s"]) == 0.5
    assert int(row["peak_memory_bytes"]) == 123_456_789
    assert row["peak_memory_meaning"] == "peak RSS of the process during the run"
    assert (row["latency_b1_p50_s"], row["latency_b1_p90_s"]) == ("0.002", "0.003")
    assert row["latency_b1_p99_s"] == ""  # too few steps: no p99, an empty cell, not a number
    assert int(row["parameters"]) == 62_006 and float(row["flops_per_sample"]) == 1.3e6
    assert float(row["achieved_flops_per_s"]) == 2.6e9 and float(row["mfu"]) == 0.0125
    assert float(row["average_watts"]) == 40.0 and float(row["joules_per_sample"]) == 0.25
    assert float(row["samples_per_s_per_watt"]) == 4.0
    assert (row["verdict"], row["verdict_explanation"]) == (
        "launch-bound",
        "4x the batch took 1.07x",
    )
    assert all(row[name] == "" for name in ("ttft_p50_s", "tpot_p50_s", "decode_tokens_per_s"))


def test_a_generation_has_its_ttft_and_tpot():
    r = _inference()
    generation = {
        "prompt_length": 64, "new_tokens": 5, "batch_size": 2, "generated_tokens": 5,
        "prefill_s": [0.010, 0.012, 0.011], "decode_s": [0.04, 0.08, 0.06],
    }  # fmt: skip
    spec = RunSpec("gpt2-tiny", "cpu", 2, 1, mode="generate").with_mode_args(
        prompt_length=64, new_tokens=5
    )
    row = _row(Result(spec=spec, status="ok", measurement=r.measurement, metrics={
        GENERATION: generation}))  # fmt: skip
    assert float(row["ttft_p50_s"]) == pytest.approx(0.011)
    assert float(row["tpot_p50_s"]) == pytest.approx(0.06 / 4)  # the first token excluded
    assert float(row["decode_tokens_per_s"]) == pytest.approx(2 / (0.06 / 4))


def test_a_failure_leaves_every_figure_empty():
    row = _row(Result(spec=RunSpec("seed-cnn", "cpu", 64, 20), status="error", error="boom"))
    assert row["status"] == "error" and row["error"] == "boom"
    empty = [name for name in CSV_FIGURES if name not in ("status", "error", "machine")]
    assert all(row[name] == "" for name in empty), {n: row[n] for n in empty if row[n]}
    assert row["processes"] == "1"  # the spec's data-parallel processes, apart from the figures


def test_the_worker_counts_the_measured_models_parameters():
    from accelbench.devices import resolve_devices
    from accelbench.engine.measure import StopRule
    from accelbench.engine.runner import run_config
    from accelbench.workloads import get_workload

    cpu, seed = resolve_devices("cpu")[0], get_workload("seed-cnn")
    spec = RunSpec("seed-cnn", "cpu", 4, 1, mode="infer")
    result = run_config(spec, seed, cpu, StopRule(blocks=1, warmup=1, min_sample_s=0.0))
    assert result.status == "ok", result.error
    expected = sum(p.numel() for p in seed.build_model().parameters())
    assert result.facts.get(PARAMETER_COUNT) == expected > 0
    assert int(_row(result)["parameters"]) == expected
