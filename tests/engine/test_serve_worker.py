"""engine/serving and engine/serve_worker: a real model (the seed's Linear) served in a worker
to real MLPerf LoadGen, SingleStream, Offline and the Server search; and bad settings refused
in one line."""

from __future__ import annotations

import re
import sys

import pytest

from accelbench.backends.serving import ServeSettings
from accelbench.core.result import RunSpec
from accelbench.engine.serve_worker import serve_isolated
from accelbench.errors import MissingDependency, UsageError
from accelbench.workloads import WorkloadRef

MLP = RunSpec(workload="mlp", device="cpu", batch_size=100, steps_per_block=1, mode="infer")
QUICK = {"max_batch": 8, "wait_s": 0.001, "duration_s": 0.3, "min_queries": 500}


@pytest.mark.parametrize(
    ("values", "said"),
    [
        ({"latency_bound_s": 0.0}, "latency_bound_s must be a positive number"),
        ({"latency_bound_s": -0.01}, "latency_bound_s must be a positive number"),
        ({"latency_bound_s": float("nan")}, "latency_bound_s must be a positive number"),
        ({"duration_s": float("inf")}, "duration_s must be a positive number"),
        ({"wait_s": -0.001}, "the wait bound must be 0 s or more"),
        ({"max_batch": 0}, "max_batch must be a positive integer"),
        ({"server_qps": 0.0}, "the Server target must be a positive QPS"),
        ({"scenarios": ("nope",)}, "unknown scenario 'nope'; valid: singlestream, offline"),
        ({"scenarios": ()}, "no scenario given; valid: singlestream, offline, server"),
    ],
)
def test_bad_settings_are_one_line_naming_what_is_valid(values, said):
    with pytest.raises(UsageError, match="^" + re.escape(said)):
        ServeSettings(**values)


def test_server_runs_singlestream_and_offline_first_which_its_search_needs():
    assert ServeSettings(scenarios=("server",)).runs() == ("singlestream", "offline", "server")
    assert ServeSettings(scenarios=("offline",)).runs() == ("offline",)


def test_serving_a_model_finds_the_highest_valid_server_target_below_offline():
    pytest.importorskip("mlperf_loadgen")
    settings = ServeSettings(latency_bound_s=0.5, search_steps=3, **QUICK)
    report = serve_isolated(MLP, WorkloadRef("mlp"), settings, timeout=240)
    offline, single = report.runs["offline"], report.runs["singlestream"]
    assert offline.result.valid and single.result.valid, offline.result.summary
    assert set(single.batches) == {1}  # one query at a time
    assert max(offline.batches) == 8 and offline.result.samples >= 500
    search = report.server
    assert search is not None and 1 <= len(search.tried) <= 3
    assert search.best is not None and search.best.result.valid
    assert search.qps == search.best.result.target_qps < offline.result.qps
    assert all(run.result.target_qps <= search.qps for run in search.tried if run.result.valid)
    assert report.server_to_offline == pytest.approx(search.qps / offline.result.qps)
    assert all(1 <= size <= 8 for run in search.tried for size in run.batches)


def test_a_bound_no_load_can_meet_is_said_not_searched():
    pytest.importorskip("mlperf_loadgen")
    settings = ServeSettings(latency_bound_s=1e-7, **QUICK)
    report = serve_isolated(MLP, WorkloadRef("mlp"), settings, timeout=240)
    search = report.server
    assert search is not None and search.best is None and search.tried == ()
    alone = report.runs["singlestream"].result.latency_s["99.00"]
    assert search.why_none == (
        f"even one request at a time takes {alone * 1e3:.3g} ms at p99; the bound is 0.0001 ms"
    )
    assert report.server_to_offline is None


def test_training_is_refused_with_a_reason():
    pytest.importorskip("mlperf_loadgen")
    with pytest.raises(UsageError, match="training configuration has no answer"):
        serve_isolated(RunSpec("mlp", "cpu", 8, 1, mode="train"), WorkloadRef("mlp"),
                       ServeSettings(), timeout=60)  # fmt: skip


def test_without_loadgen_one_line_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "mlperf_loadgen", None)  # as if not installed
    with pytest.raises(MissingDependency) as caught:
        serve_isolated(MLP, WorkloadRef("mlp"), ServeSettings(), timeout=60)
    assert str(caught.value) == (
        "mlcommons-loadgen is needed for serving under load: pip install 'accelbench[serve]'"
    )
