"""Derived figures: FLOPs per sample, achieved FLOP/s, MFU, and the verdict's inputs."""

from types import MappingProxyType

import pytest

from accelbench.analysis.facts import Probe
from accelbench.analysis.metrics import Analyzer, count_flops_per_sample, model_facts
from accelbench.core.result import Result, RunSpec
from accelbench.core.stats import Measurement
from accelbench.devices import resolve_devices
from accelbench.devices.peaks import PeakFigures
from accelbench.workloads import get_workload

CPU = resolve_devices("cpu")[0]


def test_flops_per_sample_of_the_seed_cnn_by_hand():
    # Forward multiply-adds of seed 000's SimpleCNN on one 3x64x64 image, times 2:
    # conv1 6x60x60 outputs of 3x5x5: 1,620,000; conv2 16x26x26 of 6x5x5: 1,622,400;
    # fc1 2,704x120: 324,480; fc2 120x84: 10,080; fc3 84x10: 840 -> 3,577,800 MACs.
    assert count_flops_per_sample(get_workload("seed-cnn"), "infer") == 2 * 3_577_800


def test_training_counts_backward_too():
    infer = count_flops_per_sample(get_workload("resnet50"), "infer")
    train = count_flops_per_sample(get_workload("resnet50"), "train")
    assert infer == pytest.approx(8.18e9, rel=0.01)  # 4.09 GMACs, the well-known figure
    assert 2.9 < train / infer < 3.0  # the first conv needs no input gradient


def test_mfu_uses_calibrated_peaks_for_the_precision():
    peaks = PeakFigures(MappingProxyType({"fp32": 1e11, "bf16": 4e11}), 2e10, "calibrated here")
    analyze = Analyzer({CPU.model: peaks})
    result = Result(
        spec=RunSpec("seed-cnn", "cpu", 64, 20, precision="bf16"),
        status="ok",
        measurement=Measurement(samples=(0.2,) * 8),  # 10 ms a step
        # what the worker counted (model_facts): the parent never runs the model
        metrics={
            "probe": {"batch_size": 16, "step_time_s": 0.004},
            **model_facts(get_workload("seed-cnn"), RunSpec("seed-cnn", "cpu", 64, 20)),
        },
    )
    out = analyze(result, CPU).metrics
    per_step = out["flops_per_sample"] * 64
    assert out["achieved_flops"] == pytest.approx(per_step / 0.01)
    assert out["mfu"] == pytest.approx(per_step / 0.01 / 4e11)
    assert out["peak_source"] == "calibrated here"
    assert "4x the batch took 2.50x the time" in out["verdict"]["explanation"]


def test_failed_results_are_left_alone():
    result = Result(spec=RunSpec("seed-cnn", "cpu", 64, 20), status="oom", error="x")
    assert Analyzer()(result, CPU) is result


def test_the_verdict_shows_the_two_step_times_its_paired_ratio_compares():
    # `run mlp --devices cpu --blocks 3` on a 2-core CPU: each process timed one step alone
    # after its warm-up (1.46 ms), while the probe's pairs ran 0.421 ms at batch 25 and
    # 0.43 ms at 100 (1.02x). The sentence showed 1.46 ms beside 0.421 ms and "1.02x".
    probe = Probe(
        25,
        0.421e-3,
        66,
        steps=(0.421e-3,),
        growth=(1.02,),
        growth_ci_low=1.0,
        growth_ci_high=1.03,
        paired_steps=(0.43e-3,),
    )
    result = Result(
        spec=RunSpec("mlp", "cpu", 100, 1),
        status="ok",
        measurement=Measurement(samples=(1.46e-3,) * 3),
        metrics=probe.to_metrics(),
    )
    verdict = Analyzer()(result, CPU).metrics["verdict"]
    assert verdict["kind"] == "launch-bound"
    text = verdict["explanation"]
    assert "4x the batch took 1.02x the time" in text
    assert "0.421 ms a step at batch 25, 0.43 ms at 100: medians of the pairs" in text
    assert "1.46" not in text  # the main samples' step was not timed beside the probe


def test_a_failed_probe_leaves_the_verdict_to_the_pairs_that_exist():
    # Issue 37 item 13: three processes, the probe of one failed (its probe_error stored), so
    # two ratios exist. The verdict fell back to the main samples' step (4.0 ms, timed apart,
    # in a slow moment) over the probe's (1 ms): 4.00x, "not launch-bound". The two pairs that
    # exist say 1.02x and 1.04x: launch-bound, over 2 of 3 processes.
    probe = Probe(
        25,
        1e-3,
        40,
        steps=(1e-3, 1e-3),
        growth=(1.02, 1.04),
        growth_ci_low=1.0,
        growth_ci_high=1.05,
        paired_steps=(1.02e-3, 1.04e-3),
    )
    result = Result(
        spec=RunSpec("mlp", "cpu", 100, 1),
        status="ok",
        measurement=Measurement(
            samples=(4.0e-3, 4.1e-3, 3.9e-3) * 3, rounds=((3, 0), (3, 0), (3, 0))
        ),
        metrics={**probe.to_metrics(), "probe_error": "RuntimeError: out of memory"},
    )
    verdict = Analyzer()(result, CPU).metrics["verdict"]
    text = verdict["explanation"]
    assert verdict["kind"] == "launch-bound", text
    assert "4x the batch took 1.03x the time" in text
    assert "over 2 of 3 processes (the probe failed in 1)" in text
    assert "4.00x" not in text and "4 ms" not in text
