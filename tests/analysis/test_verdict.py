"""The bottleneck verdict, on timings with known answers."""

from accelbench.analysis.verdict import Timing, judge

H200 = {"peak_flops": 680e12, "bandwidth": 4.1e12}


def test_a_step_that_hardly_grows_with_the_batch_is_launch_bound():
    # seed-cnn on an H200: 1.43 ms a step at batch 16, 1.59 ms at 64
    v = judge(Timing(batch=64, step_s=1.59e-3, probe_batch=16, probe_step_s=1.43e-3))
    assert v.kind == "launch-bound"
    assert "4x the batch took 1.11x the time" in v.explanation
    assert "CUDA graphs" in v.explanation


def test_a_step_that_grows_with_the_batch_is_not_launch_bound():
    v = judge(
        Timing(
            batch=256,
            step_s=54e-3,
            probe_batch=64,
            probe_step_s=22e-3,
            flops_per_step=24.3e9 * 256,
            **H200,
        )
    )
    assert v.kind != "launch-bound"
    assert "4x the batch took 2.45x the time" in v.explanation


def test_low_intensity_is_memory_bound_for_certain():
    # 1 GFLOP over at least 1 GB: 1 FLOP/byte, far under the ridge of ~166
    v = judge(
        Timing(
            batch=8,
            step_s=1e-3,
            probe_batch=2,
            probe_step_s=0.4e-3,
            flops_per_step=1e9,
            bytes_per_step=1e9,
            **H200,
        )
    )
    assert v.kind == "memory-bound" and "about 1 (estimated) FLOP/byte" in v.explanation


def test_high_mfu_is_compute_bound():
    # 0.5 of peak, intensity above the ridge
    flops = 0.5 * 680e12 * 0.1
    v = judge(
        Timing(
            batch=128,
            step_s=0.1,
            probe_batch=32,
            probe_step_s=0.03,
            flops_per_step=flops,
            bytes_per_step=1e9,
            **H200,
        )
    )
    assert v.kind == "compute-bound" and "MFU 50%" in v.explanation


def test_without_peaks_the_verdict_says_what_is_missing():
    v = judge(Timing(batch=64, step_s=0.1, probe_batch=16, probe_step_s=0.03))
    assert v.kind == "undetermined" and "accelbench calibrate" in v.explanation


def test_without_a_probe_there_is_no_verdict_at_all():
    # MFU would be 50%, but launch-bound cannot be ruled out without the smaller batch
    v = judge(Timing(batch=1, step_s=0.02, flops_per_step=1e12, peak_flops=1e14))
    assert v.kind == "undetermined" and "not timed at a smaller batch" in v.explanation


def test_the_advice_names_only_what_can_help_here():
    # a CPU whose calibrated bf16 peak is far below fp32's, running a token model
    slow_bf16 = Timing(
        batch=64,
        step_s=0.1,
        probe_batch=16,
        probe_step_s=0.03,
        flops_per_step=1e9,
        peak_flops=1e12,
        faster_precisions=(),
        channels_last=False,
    )
    v = judge(slow_bf16)
    assert v.kind == "memory-bound"
    assert "bf16" not in v.explanation and "channels_last" not in v.explanation
    assert "torch.compile" in v.explanation
    gpu = Timing(
        **{**vars(slow_bf16), "faster_precisions": ("tf32", "bf16"), "channels_last": True}
    )
    assert "bf16, channels_last" in judge(gpu).explanation


def test_the_analyzer_takes_faster_precisions_from_the_peaks():
    from accelbench.analysis.metrics import _faster_than_fp32
    from accelbench.core.peaks import PeakFigures

    cpu = PeakFigures({"fp32": 1e12, "bf16": 1e10}, None, "calibrated")
    h200 = PeakFigures({"fp32": 6.7e13, "tf32": 4.9e14, "bf16": 9.9e14}, 4.8e12, "datasheet")
    assert _faster_than_fp32(cpu) == ()
    assert _faster_than_fp32(h200) == ("tf32", "bf16")
    assert _faster_than_fp32(None) == ()


def test_channels_last_is_advised_only_for_a_model_that_takes_it():
    import torch
    from torch import nn

    from accelbench.analysis.metrics import channels_last_applies
    from accelbench.workloads import get_workload

    class Conv:
        name, images = "conv", True

        def build_model(self):
            return nn.Sequential(nn.Conv2d(3, 4, 3), nn.Flatten(), nn.LazyLinear(2))

        def make_batch(self, generator, batch_size):
            return torch.randn(batch_size, 3, 8, 8, generator=generator), torch.zeros(batch_size)

        def forward(self, model, inputs):
            return model(inputs)

    assert not channels_last_applies(get_workload("seed-cnn"))  # its forward calls x.view
    assert not channels_last_applies(get_workload("mlp"))  # no images
    assert channels_last_applies(Conv())  # flatten copies where view cannot


def test_a_paired_ratio_shows_the_steps_of_its_pairs_not_the_main_samples():
    # the main samples' step (1.46 ms) was timed apart from the pairs: 0.0233 ms at batch 25
    # and 0.0249 ms at 100 side by side, 1.07x
    paired = Timing(
        batch=100,
        step_s=1.46e-3,
        probe_batch=25,
        probe_step_s=0.0233e-3,
        paired_growth=(1.07, 1.05, 1.09, 3),
        pairs=66,
        paired_step_s=0.0249e-3,
    )
    v = judge(paired)
    assert v.kind == "launch-bound"
    assert "4x the batch took 1.07x the time (0.0233 ms a step at batch 25, 0.0249 ms at 100" in (
        v.explanation
    )
    assert "1.46" not in v.explanation
    # stored before the pairs' other side was: no figure at the batch rather than a wrong one
    old = judge(Timing(**{**vars(paired), "paired_step_s": None}))
    assert "1.46" not in old.explanation
    assert "0.0233 ms a step at batch 25 in the pairs" in old.explanation
