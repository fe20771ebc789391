"""The bottleneck verdict: why a configuration runs at the speed it does, from measurements.

Two questions, in order. Does the step time grow with the batch? If four times the batch
costs hardly more time, the device spends its time waiting for the host to launch kernels
(seed 000's small CNN on a big GPU): launch-bound. Where the step was profiled (explain,
--profile), the device's busy share answers that question directly and the probe is the second
witness; where they disagree the verdict says so. A probe whose ratio is impossible, or whose
intervals put it on both sides of the line, gives "undetermined". Otherwise the work itself is
the cost, and the roofline tells compute from memory: the step's arithmetic intensity (FLOPs
per byte moved) against the device's ridge point (peak FLOP/s over bandwidth).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from ..core.facts import Fact, fact
from .facts import Generation

__all__ = [
    "COMPUTE_MFU",
    "LAUNCH_GROWTH_FRACTION",
    "Timing",
    "Verdict",
    "decode_bound",
    "decode_verdict",
    "judge",
]

# Launch-bound when the time grew by less than this fraction of what proportional scaling
# would add (with 4x the batch: under 1.3x the time). Seen on an H200: seed-cnn 1.04x to 1.11x
# (launch-bound), resnet50 training 2.4x and more (not).
LAUNCH_GROWTH_FRACTION = 0.1
# Without a byte count, an MFU at least this high is taken as compute-bound.
COMPUTE_MFU = 0.30
# The profile calls a step launch-bound when the device ran kernels less than this share of it.
IDLE_LAUNCH_BOUND = 0.5
# A probe ratio outside these cannot come from the work: 4x the batch in under 0.8x the time,
# or over 2x proportional (seen under load: 0.43x and 42.41x for 4x the batch).
IMPOSSIBLE_SPEEDUP = 0.8
IMPOSSIBLE_GROWTH = 2.0


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
    step_ci: tuple[float, float] | None = None  # the step's 95% CI, seconds
    probe_ci: tuple[float, float] | None = None  # the probe's
    # Over several processes: the step's time over the probe's, process by process: their
    # geometric mean, its 95% interval (Student's t) and the processes. It replaces the two
    # intervals above, which ignore that a slow process slows both.
    paired_growth: tuple[float, float, float, int] | None = None
    processes: int = 1  # the processes measured; more than paired_growth's where a probe failed
    pairs: int = 0  # the probe's pairs of alternating blocks, over all processes
    # The step at `batch` over those pairs (as `probe_step_s` is the probe's), the ratio's other
    # side; None where not recorded. `step_s`, from the main samples, was timed apart.
    paired_step_s: float | None = None
    # Why the machine's state makes the probe untrustworthy ("" when it does not): the verdict
    # is then undetermined, whatever the ratio (analysis/trust).
    caveat: str = ""
    busy_share: float | None = None  # the profile's: share of the step with a kernel running
    busy_source: str = ""  # where that profile came from, when not this result's own
    kernels_per_step: float | None = None
    mean_kernel_s: float | None = None
    graphs: bool = True  # whether the device can capture CUDA graphs (for the advice)
    # The low precisions known to be faster than fp32 here (by the calibrated or published
    # peaks), and whether channels_last can apply: the advice names only what may help.
    faster_precisions: tuple[str, ...] = ("bf16",)
    channels_last: bool = True


@dataclass(frozen=True)
class Verdict:
    kind: str  # "launch-bound", "compute-bound", "memory-bound" or "undetermined"
    explanation: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def judge(t: Timing) -> Verdict:
    """The verdict: the profile's busy share first where there is one, with the batch probe
    as the second witness; the roofline for what is not launch-bound."""
    probe = _probe_witness(t)
    if t.busy_share is not None:
        launch = _from_profile(t, probe)
    elif probe.kind == "launch-bound":
        launch = Verdict(probe.kind, f"{probe.explanation}: {_launch_advice(t)}")
    else:
        launch = probe
    if launch.kind in ("launch-bound", "undetermined"):
        return launch
    return _roofline(t, launch.explanation)


def _probe_witness(t: Timing) -> Verdict:
    """What the batch probe says: launch-bound, "not" (its growth in the explanation), or
    undetermined (no probe, or a probe too noisy or impossible to believe)."""
    if not (t.probe_batch and t.probe_step_s and t.probe_batch < t.batch):
        # Without the smaller batch, launch-bound cannot be ruled out (batch 1 is the likeliest
        # case of all), so no other verdict may be given either.
        return Verdict(
            "undetermined",
            "no verdict: the step was not timed at a smaller batch "
            "(batch 1, --no-verdict, --quick, --max-batch, data-parallel, or the probe failed)",
        )
    work, growth = t.batch / t.probe_batch, t.step_s / t.probe_step_s
    if t.paired_growth is not None:
        growth = t.paired_growth[0]
    scaled = f"{work:.0f}x the batch took {growth:.2f}x the time ({_steps(t)})"
    noisy = t.caveat or _noisy(t, work, growth)
    if noisy:
        return Verdict(
            "undetermined", f"undetermined: the machine was too noisy to tell: {scaled}; {noisy}"
        )
    if growth < _threshold(work):
        return Verdict("launch-bound", f"launch-bound: {scaled}{_paired(t)}")
    return Verdict("not", f"{scaled}{_paired(t)}")


def _paired(t: Timing) -> str:
    """The paired interval behind the ratio, where there is one."""
    if t.paired_growth is None:
        return ""
    _, low, high, processes = t.paired_growth
    where = f"{processes} processes" if processes > 1 else "one process"
    if processes < t.processes:  # the others' probes failed: only the pairs that exist count
        failed = t.processes - processes
        where = f"{processes} of {t.processes} processes (the probe failed in {failed})"
    return (
        f"; {low:.2f}x to {high:.2f}x over {where}, {t.pairs} pairs of samples at the two "
        "batches timed in alternation"
    )


def _steps(t: Timing) -> str:
    """The two step times the ratio compares. A paired ratio's are the medians of its pairs,
    never the main samples' step: those were timed apart, and on their own terms (with
    --blocks 3, one step alone a sample, mlp's took 4x its paired step on a CPU)."""
    assert t.probe_step_s is not None
    probe = f"{t.probe_step_s * 1e3:.3g} ms a step at batch {t.probe_batch}"
    if t.paired_growth is None:
        return f"{probe}, {t.step_s * 1e3:.3g} ms at {t.batch}"
    if t.paired_step_s is None:  # stored before the pairs' other side was
        return f"{probe} in the pairs; their step at {t.batch} was not recorded"
    return f"{probe}, {t.paired_step_s * 1e3:.3g} ms at {t.batch}: medians of the pairs"


def _threshold(work: float) -> float:
    return 1 + LAUNCH_GROWTH_FRACTION * (work - 1)


def _noisy(t: Timing, work: float, growth: float) -> str:
    """Why the probe's ratio cannot be believed, or "": outside what a step can do (a larger
    batch much faster, or far slower than proportional), or intervals wide enough to put it on
    either side of the launch-bound line."""
    if growth < IMPOSSIBLE_SPEEDUP:
        return "a larger batch cannot take much less time than a smaller one"
    if growth > IMPOSSIBLE_GROWTH * work:
        return f"{growth:.1f}x the time for {work:.0f}x the work is beyond what the work explains"
    if t.paired_growth is not None:
        low, high = t.paired_growth[1], t.paired_growth[2]
    elif t.step_ci is None or t.probe_ci is None or min(t.probe_ci) <= 0:
        return ""
    else:
        low, high = t.step_ci[0] / t.probe_ci[1], t.step_ci[1] / t.probe_ci[0]
    if low < _threshold(work) <= high:
        return (
            f"the interval allows {low:.2f}x to {high:.2f}x, on both sides of the "
            f"launch-bound line at {_threshold(work):.2f}x"
        )
    return ""


def _from_profile(t: Timing, probe: Verdict) -> Verdict:
    """The profile's witness (the device's busy share), with the probe's beside it."""
    assert t.busy_share is not None
    kernels = ""
    if t.kernels_per_step and t.mean_kernel_s is not None:
        kernels = f"; {t.kernels_per_step:.0f} kernels of {_us(t.mean_kernel_s)} on average"
    busy = f"the device was busy {t.busy_share:.0%} of the step{t.busy_source}{kernels}"
    launch = t.busy_share < IDLE_LAUNCH_BOUND
    agrees = (probe.kind == "launch-bound") == launch
    second = "the batch probe agrees: " + probe.explanation.removeprefix("launch-bound: ")
    if probe.kind == "undetermined":
        second = f"the batch probe could not tell ({probe.explanation})"
    elif not agrees:
        second = f"the batch probe disagrees ({probe.explanation}); the profile is the closer look"
    if launch:
        return Verdict("launch-bound", f"launch-bound: {busy}; {second}; {_launch_advice(t)}")
    return Verdict("not", f"{busy}; {second}")


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:.3g} µs"


def _launch_advice(t: Timing) -> str:
    helps = (
        "larger batches, torch.compile or CUDA graphs help"
        if t.graphs
        else ("larger batches or torch.compile help")
    )
    return (
        "the time goes to per-operation overhead (Python, dispatch, kernel launches) while the "
        f"device waits; {helps}"
    )


def _roofline(t: Timing, scaled: str) -> Verdict:
    """Compute- or memory-bound, for a step that is not launch-bound."""
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
                f"{mfu:.0%}; fewer bytes help ({_fewer_bytes(t)})",
            )
    if mfu >= COMPUTE_MFU:
        faster = "/".join(t.faster_precisions)
        math = f"faster math helps ({faster})" if faster else "no faster precision is known here"
        return Verdict("compute-bound", f"compute-bound: {scaled}; MFU {mfu:.0%}; {math}")
    return Verdict(
        "memory-bound",
        f"likely memory-bound or held back by non-matrix work: {scaled}; MFU only {mfu:.0%}; "
        f"{_fewer_bytes(t)} may help",
    )


def _fewer_bytes(t: Timing) -> str:
    """The levers that move fewer bytes here: a low precision only where it is known to be
    faster than fp32 (a CPU without bf16 units runs it far slower), channels_last only for
    image models."""
    low = [p for p in t.faster_precisions if p in ("bf16", "fp16")][:1]
    layout = ["channels_last"] if t.channels_last else []
    return ", ".join([*low, *layout, "fusion by torch.compile"])


# A decode step within twice its floor is bound by what sets the floor; one that takes three
# times its floor or more spends most of its time elsewhere (between: undetermined).
BOUND_SHARE, HOST_SHARE = 0.5, 1 / 3


def decode_bound(generation: Generation) -> str:
    """What bounds the decode step: "memory bandwidth" or "compute" (its floor is at least half
    the median step), "host" (both floors a third of it or less, the step eager: Python and
    kernel launches between small kernels), "kernels" (the same, compiled: the kernels
    themselves far from the peaks), or "" (undetermined, or the floors are not known)."""
    share = generation.decode_floor_share
    if share is None or not math.isfinite(share) or HOST_SHARE < share < BOUND_SHARE:
        return ""
    if share >= BOUND_SHARE:
        return _larger_floor(generation)
    return "host" if generation.graph_breaks is None else "kernels"


def decode_verdict(generation: Generation) -> str:
    """What bounds the decode step, from its floors (`decode_bound`), in a sentence."""
    share = generation.decode_floor_share
    if share is None:
        return ""
    floor = f"the {_larger_floor(generation)} floor is {share:.0%} of the median TPOT"
    bound = decode_bound(generation)
    if bound in ("memory bandwidth", "compute"):
        return f"decode is bound by {bound}: {floor}"
    if bound in ("host", "kernels"):
        text = (
            f"decode is bound by neither memory nor compute: {floor}; the rest is the host "
            "(Python, kernel launches, the synchronization each token) or kernels far from "
            "the peaks"
        )
        if bound == "host":  # eager decode steps
            return text + (
                ". A static KV cache with torch.compile (reduce-overhead: CUDA graphs) cuts "
                "the host's launches"
            )
        return text
    return f"decode bound undetermined: {floor}, between {HOST_SHARE:.0%} and {BOUND_SHARE:.0%}"


def _larger_floor(generation: Generation) -> str:
    memory = generation.decode_memory_floor_s or 0.0
    compute = generation.decode_compute_floor_s or 0.0
    return "memory bandwidth" if memory >= compute else "compute"


VERDICT = "verdict"


@fact(VERDICT)
@dataclass(frozen=True)
class Bottleneck(Fact):
    """The bottleneck verdict (`verdict`): launch-, compute- or memory-bound, or undetermined."""

    kind: str = ""
    explanation: str = ""
