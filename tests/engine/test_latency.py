"""Per-request latency at batch 1: measured for inference, left out for training and with
--no-latency, a p99 only from 100 steps, a failure kept beside the result, and the record
surviving export and import."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from accelbench.core.facts import check
from accelbench.devices import resolve_devices
from accelbench.engine import runner
from accelbench.engine.facts import (
    LATENCY,
    LATENCY_ERROR,
    LATENCY_FAILURE,
    OVERHEAD,
    P99_MIN_SAMPLES,
    Latency,
    Overhead,
)
from accelbench.engine.measure import StopRule
from accelbench.render.console import run_tables
from accelbench.render.html import html_report
from accelbench.render.markdown import markdown_report
from accelbench.render.rows import LATENCY_HEADER, latency_cell
from accelbench.store.db import Store
from accelbench.store.results_file import read_export, write_export
from accelbench.workloads import WorkloadRef, load_workload
from tests.conftest import run_cli


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    """mlp on the CPU: inference at batch 8 (timed again at batch 1) and at batch 1 with 40
    single-step samples (its own samples serve), and training at batch 8."""
    db = tmp_path_factory.mktemp("latency") / "r.db"
    run = run_cli(
        "run", "mlp", "--devices", "cpu", "--modes", "infer,train", "--batch-sizes", "8,1",
        "--blocks", "40", "--no-verdict", "--quiet", "--db", str(db),
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    with Store(db) as store:
        found = {(r.spec.mode, r.spec.batch_size): r for r in store.results()}
    return run.stdout, found, db


def test_inference_has_ordered_percentiles_training_none(swept):
    _, found, _ = swept
    latency = found["infer", 8].facts.get(Latency)
    assert latency is not None and latency.batch_size == 1
    assert P99_MIN_SAMPLES <= latency.samples == len(latency.steps_s) <= 1000
    assert latency.p99_s is not None and 0 < latency.p50_s <= latency.p90_s <= latency.p99_s
    expected = np.percentile(latency.steps_s, [50, 90, 99])
    assert np.allclose([latency.p50_s, latency.p90_s, latency.p99_s], expected)
    assert "after the main samples" in latency.source
    overhead = found["infer", 8].facts.get(Overhead)
    assert overhead is not None and (overhead.latency_s or 0) > 0
    for batch in (8, 1):
        assert found["train", batch].facts.get(Latency) is None
        assert LATENCY not in found["train", batch].metrics


def test_a_batch_1_measurement_of_single_steps_is_its_own_latency(swept):
    """40 samples: the figures come from them, and a p99 is undetermined, not invented."""
    out, found, _ = swept
    result = found["infer", 1]
    latency = result.facts.get(Latency)
    assert latency is not None and latency.samples == 40 and latency.p99_s is None
    assert result.measurement is not None
    assert latency.steps_s == tuple(round(s, 9) for s in result.measurement.samples)
    assert "p99 undetermined, 40 samples (needs 100)" in out
    assert "undetermined, 40 samples (needs 100)" in latency_cell(result)


def test_the_latency_survives_export_and_import(swept, tmp_path):
    _, found, db = swept
    with Store(db) as store:
        results = store.results()
    path = tmp_path / "export.json"
    write_export(results, path)
    with Store(tmp_path / "other.db") as store:
        store.import_results(read_export(path))
        back = {(r.spec.mode, r.spec.batch_size): r for r in store.results()}
    for key in (("infer", 8), ("infer", 1)):
        assert back[key].facts.get(Latency) == found[key].facts.get(Latency) is not None


def test_the_reports_have_the_latency_column(swept):
    _, found, _ = swept
    report = markdown_report(list(found.values()))
    header, align = report.splitlines()[:2]
    assert LATENCY_HEADER in header and header.count("|") == align.count("|")
    cell = latency_cell(found["infer", 8])
    assert cell != "—" and cell in report
    page = html_report(list(found.values()))
    assert f"<th>{LATENCY_HEADER}</th>" in page and f">{cell}</td>" in page


def test_no_latency_leaves_it_out(tmp_path):
    run = run_cli(
        "run", "mlp", "--devices", "cpu", "--modes", "infer", "--blocks", "3", "--no-verdict",
        "--no-latency", "--json", "--db", str(tmp_path / "r.db"),
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    (result,) = json.loads(run.stdout)["results"]
    assert LATENCY not in result["metrics"] and LATENCY_ERROR not in result["metrics"]
    assert "latency_s" not in result["metrics"][OVERHEAD]


def test_a_failed_latency_keeps_the_result_and_says_why(monkeypatch):
    build = runner.build

    def no_batch_1(spec, workload, device):
        if spec.batch_size == 1:
            raise RuntimeError("no batch of 1 here")
        return build(spec, workload, device)

    monkeypatch.setattr(runner, "build", no_batch_1)
    workload, device = load_workload(WorkloadRef("mlp")), resolve_devices("cpu")[0]
    spec = runner.make_spec(workload, device, mode="infer", batch_size=4)
    result = runner.run_config(
        spec, workload, device, StopRule(blocks=3), probe=False, latency=True
    )
    assert result.status == "ok" and result.measurement is not None
    assert result.facts.get(Latency) is None
    assert result.facts.get(LATENCY_FAILURE) == "RuntimeError: no batch of 1 here"
    assert latency_cell(result) == "—"
    assert "no latency at batch 1: RuntimeError: no batch of 1 here" in run_tables([result])


def test_fewer_than_100_steps_give_no_p99():
    steps = [0.001 * (i + 1) for i in range(P99_MIN_SAMPLES - 1)]
    short = Latency.from_steps(steps, "test")
    assert short.p99_s is None and short.samples == 99
    assert short.p50_s == pytest.approx(np.percentile(steps, 50))
    full = Latency.from_steps([*steps, 0.5], "test")
    assert full.p99_s == pytest.approx(np.percentile([*steps, 0.5], 99))
    one = Latency.from_steps([0.002], "test")
    assert (one.p50_s, one.p90_s, one.p99_s) == (0.002, 0.002, None)


def test_import_validation_takes_the_record_and_refuses_a_bad_one():
    record = Latency.from_steps([0.001, 0.002, 0.003], "test").to_metrics()
    check(json.loads(json.dumps(record)))
    bad = {LATENCY: {**record[LATENCY], "p50_s": "fast"}}
    with pytest.raises(ValueError, match="metrics.latency"):
        check(bad)
    with pytest.raises(ValueError, match="metrics.latency_error"):
        check({LATENCY_ERROR: 3})


def test_the_time_cap_stops_short_of_min_samples():
    rule = StopRule(max_time=2.0, min_samples=100, min_blocks=1000, max_blocks=1000, time_cap=5)
    assert not rule.done([0.1] * 30, 3.0)  # past max_time, short of min_samples: go on
    assert rule.done([0.1] * 50, 5.0)  # the cap: stop with what was taken
    assert rule.done([0.01] * 100, 2.0)
    assert not replace(rule, time_cap=None).done([0.1] * 50, 5.0)  # without, no stop
