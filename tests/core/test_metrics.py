"""Typed metrics: each group reads what its writer stores, absent groups read as None, and a
stored result reads the same after a trip through the database."""

from __future__ import annotations

import ast
from pathlib import Path

import torch

import accelbench
from accelbench.analysis.drift import compare_outputs
from accelbench.analysis.facts import (
    ACHIEVED_FLOPS,
    DRIFT,
    MEMORY_TENSORS_ONLY,
    MFU,
    ONNXRUNTIME,
    PEAK_FLOPS,
    PEAK_SOURCE,
    PROBE,
    TENSORS_ONLY,
    VERIFY,
    Drift,
    Flops,
    OnnxRuntimeFacts,
    Probe,
    Pruning,
    Verification,
)
from accelbench.analysis.verdict import VERDICT, Bottleneck
from accelbench.core.facts import Facts
from accelbench.core.result import Result, RunSpec
from accelbench.core.stats import Measurement
from accelbench.devices.power import (
    JOULES_PER_SAMPLE,
    POWER,
    POWER_MISSING,
    POWER_WARNING,
    SAMPLES_PER_S_PER_WATT,
    Power,
    PowerReading,
)
from accelbench.engine.facts import (
    DEVICE_MEMORY,
    RANKS,
    SCALING_UNAVAILABLE,
    SETUP,
    SETUP_S,
    WORLD_SIZE,
    MaxBatchSearch,
    Parallel,
    RankFigures,
)
from accelbench.engine.maxbatch import MaxBatch
from accelbench.store.db import Store
from accelbench.workflows.facts import OPTIMIZE, OptimizeTag


def _result(metrics: dict[str, object]) -> Result:
    return Result(
        spec=RunSpec("mlp", "cpu", 8, 1),
        status="ok",
        measurement=Measurement((0.1,) * 6),
        metrics=metrics,
    )


def test_nothing_recorded_reads_as_none():
    metrics = Facts({})
    for kind in (Probe, Drift, Power, Parallel, MaxBatchSearch, Pruning, OnnxRuntimeFacts):
        assert metrics.get(kind) is None
    assert metrics.get(OptimizeTag) is None and metrics.get(Bottleneck) is None
    assert metrics.get(Verification) is None and metrics.get(SETUP) is None
    assert metrics.get_or_default(Flops) == Flops() and metrics.get(POWER_MISSING) == ""
    assert not metrics.get(TENSORS_ONLY)


def test_drift_reads_what_compare_outputs_writes():
    reference = torch.tensor([[1.0, 0.0], [0.0, 2.0]])
    written = compare_outputs(reference, reference * 1.01, classifier=True)
    drift = Facts({DRIFT: written}).get(Drift)
    assert drift is not None and drift.samples == 2 and drift.top1_agreement == 1.0
    assert abs((drift.max_rel_error or 0) - 0.01) < 1e-6 and not drift.not_finite
    broken = compare_outputs(reference, reference * float("nan"), classifier=False)
    read = Drift.from_record(broken)
    assert read.not_finite and read.max_rel_error is None and read.top1_unavailable
    assert Drift.from_record({"error": "RuntimeError: no"}).error == "RuntimeError: no"


def test_power_reads_the_reading_and_the_figures_beside_it():
    reading = PowerReading(average_watts=200.0, joules=80.0, seconds=0.4, samples=2, source="x")
    stored = {
        POWER: reading.to_dict(),
        JOULES_PER_SAMPLE: 0.5,
        SAMPLES_PER_S_PER_WATT: 2.0,
        POWER_WARNING: "rough",
    }
    assert Facts(stored).get(Power) == Power(200.0, 80.0, 0.4, "x", 0.5, 2.0, "rough")


def test_max_batch_reads_what_the_search_writes():
    found = MaxBatch(_result({}), ((8, "ok"), (16, "oom")), limit_reached=True)
    stored = {**found.to_metrics(), DEVICE_MEMORY: 2**30}
    search = Facts(stored).get(MaxBatchSearch)
    assert search == MaxBatchSearch(8, ((8, "ok"), (16, "oom")), True, "", 2**30)


def test_flops_parallel_and_the_bottleneck_verdict():
    stored = {
        ACHIEVED_FLOPS: 2e12,
        PEAK_FLOPS: 4e12,
        PEAK_SOURCE: "datasheet",
        MFU: 0.5,
        VERDICT: {"kind": "compute-bound", "explanation": "because"},
        RANKS: [{"rank": 0, "device": "cpu", "it_per_s": 3.0, "samples_per_s": 24.0}],
        WORLD_SIZE: 1,
        SCALING_UNAVAILABLE: "missing",
    }
    metrics = Facts(stored)
    assert metrics.get(Flops) == Flops(None, 2e12, 4e12, "datasheet", 0.5)
    assert metrics.get(Bottleneck) == Bottleneck("compute-bound", "because")
    assert metrics.get(Parallel) == Parallel(
        1, (RankFigures(0, "cpu", 3.0, 24.0),), scaling_unavailable="missing"
    )


def test_verification_keeps_a_loss_that_was_not_finite():
    facts = {"verdict": "diverges", "reasons": ["loss"], "loss_curve": [2.0, None], "epochs": 2}
    verified = Facts({VERIFY: facts}).get(Verification)
    assert verified == Verification(
        verdict="diverges", reasons=("loss",), loss_curve=(2.0, None), epochs=2
    )


def test_metrics_read_the_same_after_the_database(tmp_path):
    stored = {
        SETUP_S: 1.5,
        PROBE: {"batch_size": 2, "step_time_s": 0.01, "blocks": 5},
        OPTIMIZE: {"variant": "fp32 eager", "tolerance": {"max_rel_error": 0.05}},
        ONNXRUNTIME: {"onnxruntime": "1.30", "providers": ["CPUExecutionProvider"]},
        MEMORY_TENSORS_ONLY: True,
    }
    with Store(tmp_path / "r.db") as store:
        saved = store.save(_result(stored))
        (read,) = store.results()
    assert saved.metrics == stored
    before, after = Facts(stored), Facts(read.metrics)
    for kind in (SETUP, Probe, OptimizeTag, OnnxRuntimeFacts, TENSORS_ONLY):
        assert before.get(kind) == after.get(kind)
    ort = after.get(OnnxRuntimeFacts)
    assert ort is not None and ort.providers == ("CPUExecutionProvider",)
    assert ort.version == "1.30"
    probe = after.get(Probe)
    assert probe is not None and probe.step_time_s == 0.01


def test_writers_records_read_back_as_the_values_that_wrote_them():
    probe = Probe(4, 0.02, blocks=5, ci_low=0.019, ci_high=0.021, steps=(0.02, 0.021))
    assert probe.to_metrics() == {
        PROBE: {
            "batch_size": 4,
            "step_time_s": 0.02,
            "blocks": 5,
            "ci_low": 0.019,
            "ci_high": 0.021,
            "steps": [0.02, 0.021],  # as JSON holds it
            "growth": [],
            "growth_ci_low": None,
            "growth_ci_high": None,
            "paired_steps": [],
        }
    }
    assert Probe.from_metrics(probe.to_metrics()) == probe
    old = {PROBE: {"batch_size": 4, "step_time_s": 0.02, "blocks": 5}}  # before the CI
    assert Probe.from_metrics(old) == Probe(4, 0.02, 5)
    assert Facts(probe.to_metrics()).get(Probe) == probe
    tag = OptimizeTag("bf16", {"max_rel_error": 0.05, "min_top1": 0.95})
    assert Facts(tag.to_metrics()).get(OptimizeTag) == tag
    # a probe recorded without its block count still gives the verdict its batch and time
    assert Facts({PROBE: {"batch_size": 2, "step_time_s": 0.1}}).get(Probe) == Probe(
        2, 0.1
    )


def test_a_result_reads_its_own_metrics_through_the_typed_view():
    result = _result({VERIFY: {"verdict": "ok", "accuracy": 0.9}, SETUP_S: 2.0})
    assert result.facts.get(SETUP) == 2.0
    assert result.facts.get(Verification) == Verification(verdict="ok", accuracy=0.9)
    assert _result({}).facts.get(Verification) is None


def _metrics_keys_spelled_out(tree: ast.AST) -> list[int]:
    """Lines that read `….metrics["key"]` / `….metrics.get("key")` or write
    `metrics={"key": …}` with the key as a literal rather than the constant of the fact's module."""

    def is_metrics(node: ast.AST) -> bool:
        return (isinstance(node, ast.Attribute) and node.attr == "metrics") or (
            isinstance(node, ast.Name) and node.id == "metrics"
        )

    def literal(node: ast.AST | None) -> bool:
        return isinstance(node, ast.Constant) and isinstance(node.value, str)

    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and is_metrics(node.value) and literal(node.slice):
            found.append(node.lineno)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            get = node.func.attr == "get" and is_metrics(node.func.value)
            if get and node.args and literal(node.args[0]):
                found.append(node.lineno)
        if isinstance(node, ast.keyword) and node.arg == "metrics":
            value = node.value
            if isinstance(value, ast.Dict) and any(literal(k) for k in value.keys):
                found.append(value.lineno)
    return found


def test_no_module_spells_a_metrics_key_out():
    package = Path(accelbench.__file__).parent
    spelled = {
        f"{path.relative_to(package)}:{line}"
        for path in package.rglob("*.py")
        for line in _metrics_keys_spelled_out(ast.parse(path.read_text()))
    }
    assert not spelled, f"use the key constants of the facts' modules: {sorted(spelled)}"


def test_the_check_sees_a_key_spelled_out():
    code = 'a = r.metrics["drift"]\nb = r.metrics.get("probe")\nc = Result(metrics={"verify": 1})'
    assert _metrics_keys_spelled_out(ast.parse(code)) == [1, 2, 3]
    assert _metrics_keys_spelled_out(ast.parse("a = r.metrics[DRIFT]")) == []
