"""The timing loop: warm-up, then timed blocks until the stop rule is met.

A block is one "it" in seed 000's sense (an epoch of steps). The steps inside a block run
back to back with nothing that waits for the device: no .item(), no printing, no synchronize.
The timer synchronizes at the block's two boundaries, so the time counts work done, not work
queued; the progress callback and the stop rule run outside the timed region.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from typing import Any

from ..core.stats import Measurement
from ..devices import Timer

__all__ = ["StopRule", "measure", "time_blocks"]


@dataclass(frozen=True)
class StopRule:
    """When to stop timing blocks.

    With `blocks` set, exactly that many. Otherwise keep going until the 95% CI of the median
    is within `target_ci` of it (after at least `min_blocks`), or `max_time` seconds of timed
    blocks have passed (once `min_samples` were timed), or `max_blocks` were timed: whichever
    comes first. `time_cap`, where set, stops it after that many seconds of timed samples even
    short of `min_samples`.
    """

    blocks: int | None = None
    warmup: int = 1
    max_time: float = 20.0
    min_blocks: int = 10
    max_blocks: int = 100_000
    target_ci: float = 0.02
    # The optimization search compares intervals, and a median's 95% CI needs 6 samples.
    min_samples: int = 1
    # Adaptive rule only: group blocks shorter than this into one timed sample. Synchronizing at
    # a sample's start empties the device's queue, so until the host is ahead again the device
    # waits on each launch: on an H200, resnet50's 54 ms training step took 2.4% longer timed
    # one step per sample than back to back (benchmarks/harness_check.py). Over 250 ms that
    # cost falls under 1%.
    min_sample_s: float = 0.25
    # A latency's p99 wants 100 samples, but not at any price: a slow model gets what fits.
    time_cap: float | None = None
    # The optimization search's early stop: blocks per second a variant must beat to be kept
    # (the stack's median rate times 1 + the keep threshold). Once `min_samples` are timed,
    # a process whose fastest sample is slower than that stops: its median cannot be faster.
    give_up_rate: float | None = None

    def __post_init__(self) -> None:
        if self.blocks is not None and self.blocks < 1:
            raise ValueError(f"blocks must be 1 or more, got {self.blocks}")
        if self.warmup < 0 or self.max_time <= 0 or self.min_blocks < 1:
            raise ValueError(f"bad stop rule {self}")

    def at_least(self, warmup: int) -> StopRule:
        """This rule with `warmup` warm-up blocks where it had fewer (a lever needs them)."""
        return self if self.warmup >= warmup else replace(self, warmup=warmup)

    def gives_up(self, samples: Sequence[float], repeat: int) -> bool:
        """Whether even the fastest of `samples` (each `repeat` blocks) is slower than the
        rate asked for, once `min_samples` were timed: the rest cannot lift the median."""
        if self.blocks is not None or self.give_up_rate is None:
            return False  # a count asked for is timed whole
        if len(samples) < max(1, self.min_samples):
            return False
        return repeat / min(samples) < self.give_up_rate

    def done(self, samples: list[float], elapsed: float) -> bool:
        """Whether to stop, given the timed samples so far and their total seconds."""
        n = len(samples)
        if self.blocks is not None:
            return n >= self.blocks
        if self.time_cap is not None and elapsed >= self.time_cap:
            return True
        if n >= self.max_blocks or (elapsed >= self.max_time and n >= self.min_samples):
            return True
        # Checking the CI costs a sort; do it on a geometric schedule, not after every block.
        if n < self.min_blocks or n % max(1, n // 10) != 0:
            return False
        fraction = Measurement(tuple(samples)).time.ci_half_width_fraction  # repeat cancels
        return fraction is not None and fraction <= self.target_ci


def measure(
    run_block: Callable[[], None],
    new_timer: Callable[[], Timer],
    stop: StopRule,
    on_block: Callable[[int, float], None] | None = None,
    timed_phase: AbstractContextManager[Any] | Sequence[AbstractContextManager[Any]] = (),
    repeat: int | None = None,
) -> Measurement:
    """Run `stop.warmup` warm-up blocks, then timed samples until `stop` says enough.

    Warm-up blocks are timed the same way (first-step costs such as compilation, cuDNN
    autotuning and allocator growth show there) but kept apart from the samples.
    `on_block(i, seconds)` is called after each warm-up block and timed sample, i counting from
    0 across both. `timed_phase` (a power meter, say, or several: the first outermost) is
    entered around the timed samples only. `repeat` fixes the blocks per timed sample (a later
    process of a configuration groups them as its first did); else the rule sizes them.
    """
    report = on_block or (lambda i, seconds: None)
    warmup: list[float] = []
    # The adaptive rule sizes its samples from the last warm-up block, which must come after
    # the first (compilation and first-call costs land there): at least two then.
    sizing = stop.blocks is None and repeat is None
    for i in range(max(stop.warmup, 2) if sizing else stop.warmup):
        warmup.append(time_blocks(run_block, new_timer, 1))
        report(i, warmup[-1])
    repeat = repeat or _repeat(stop, warmup)
    samples: list[float] = []
    elapsed = 0.0
    phases = timed_phase if isinstance(timed_phase, Sequence) else (timed_phase,)
    with contextlib.ExitStack() as stack:
        for phase in phases:
            stack.enter_context(phase)
        while not stop.done(samples, elapsed) and not stop.gives_up(samples, repeat):
            samples.append(time_blocks(run_block, new_timer, repeat))
            elapsed += samples[-1]
            report(len(warmup) + len(samples) - 1, samples[-1])
    return Measurement(samples=tuple(samples), warmup=tuple(warmup), repeat=repeat)


def time_blocks(
    run_block: Callable[[], None], new_timer: Callable[[], Timer], repeat: int
) -> float:
    """Seconds for `repeat` blocks back to back, the device synchronized at both ends."""
    timer = new_timer()
    timer.start()
    for _ in range(repeat):
        run_block()
    timer.stop()
    return timer.elapsed()


def _repeat(stop: StopRule, warmup: list[float]) -> int:
    """Blocks per timed sample: 1 for a fixed count, else enough to last `min_sample_s`."""
    if stop.blocks is not None or not warmup or warmup[-1] <= 0:
        return 1
    # The last warm-up block is past compilation and autotuning: the best guess at a block.
    return max(1, math.ceil(stop.min_sample_s / warmup[-1]))
