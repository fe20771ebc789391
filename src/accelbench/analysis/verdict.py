"""The bottleneck verdict: why a configuration runs at the speed it does, from measurements.

Two questions, in order. Does the step time grow with the batch? If four times the batch
costs hardly more time, the device spends its time waiting for the host to launch kernels
(seed 000's small CNN on a big GPU): launch-bound. Otherwise the work itself is the cost, and the
roofline tells compute from memory: the step's arithmetic intensity (FLOPs per byte moved)
against the device's ridge point (peak FLOP/s over bandwidth).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["Timing", "Verdict", "judge", "LAUNCH_GROWTH_FRACTION", "COMPUTE_MFU"]

# Launch-bound when the time grew by less than this fraction of what proportional scaling
# would add (with 4x the batch: under 1.3x the time). Seen on an H200: seed-cnn 1.04x to 1.11x
# (launch-bound), resnet50 training 2.4x and more (not).
LAUNCH_GROWTH_FRACTION = 0.1
# Without a byte count, an MFU at least this high is taken as compute-bound.
COMPUTE_MFU = 0.30


@dataclass(frozen=True)
class Timing:
    """What the verdict is made from. None where a figure is unknown."""

    batch: int
    step_s: float
    probe_batch: int | None = None
    probe_step_s: float | None = None
    flops_per_step: float | None = None
    peak_flops: float | None = None  # for the precision in use
    bandwidth: float | None = None  # bytes/s
    bytes_per_step: float | None = None  # an estimate, see analysis


@dataclass(frozen=True)
class Verdict:
    kind: str  # "launch-bound", "compute-bound", "memory-bound" or "undetermined"
    explanation: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def judge(t: Timing) -> Verdict:
    if not (t.probe_batch and t.probe_step_s and t.probe_batch < t.batch):
        # Without the smaller batch, launch-bound cannot be ruled out (batch 1 is the likeliest
        # case of all), so no other verdict may be given either.
        return Verdict(
            "undetermined",
            "no verdict: the step was not timed at a smaller batch "
            "(batch 1, --no-verdict, --max-batch, data-parallel, or the probe failed)",
        )
    launch = _launch_bound(t)
    if launch is not None:
        return launch
    scaled = (
        f"{t.batch / t.probe_batch:.0f}x the batch took {t.step_s / t.probe_step_s:.2f}x the time"
    )
    if t.flops_per_step is None or t.peak_flops is None:
        return Verdict(
            "undetermined",
            f"not launch-bound ({scaled}); no peak figures for this device and precision, "
            "so compute- and memory-bound cannot be told apart: run accelbench "
            "calibrate",
        )
    mfu = t.flops_per_step / t.step_s / t.peak_flops
    if t.bandwidth and t.bytes_per_step:
        # The byte count is an estimate meant as a lower bound (see analysis), so the intensity
        # is meant as an upper bound; above the ridge point only a high MFU says compute.
        intensity = t.flops_per_step / t.bytes_per_step
        ridge = t.peak_flops / t.bandwidth
        if intensity < ridge:
            return Verdict(
                "memory-bound",
                f"memory-bound: {scaled}; about {intensity:.0f} (estimated) "
                f"FLOP/byte against the device's ridge point of {ridge:.0f}; MFU "
                f"{mfu:.0%}; fewer bytes help (bf16, channels_last, fusion by "
                "torch.compile)",
            )
    if mfu >= COMPUTE_MFU:
        return Verdict(
            "compute-bound",
            f"compute-bound: {scaled} and reaches MFU {mfu:.0%}; "
            "faster math helps (tf32/bf16 tensor cores)",
        )
    return Verdict(
        "memory-bound",
        f"likely memory-bound or held back by non-matrix work: "
        f"{scaled} but reaches only MFU {mfu:.0%}; bf16, channels_last or "
        "torch.compile may help",
    )


def _launch_bound(t: Timing) -> Verdict | None:
    if t.probe_batch is None or t.probe_step_s is None or t.probe_batch >= t.batch:
        return None
    work = t.batch / t.probe_batch
    growth = t.step_s / t.probe_step_s
    if growth >= 1 + LAUNCH_GROWTH_FRACTION * (work - 1):
        return None
    return Verdict(
        "launch-bound",
        f"launch-bound: {work:.0f}x the batch took {growth:.2f}x the time "
        f"({t.probe_step_s * 1e3:.3g} ms a step at batch {t.probe_batch}, "
        f"{t.step_s * 1e3:.3g} ms at {t.batch}): the time goes to per-operation overhead (Python, "
        "dispatch, kernel launches) while the device waits; "
        "larger batches, torch.compile or CUDA graphs help",
    )
