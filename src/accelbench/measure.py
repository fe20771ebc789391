"""The timing loop: warm-up, then timed blocks until the stop rule is met.

A block is one "it" in seed 000's sense (an epoch of steps). The steps inside a block run
back to back with nothing that waits for the device: no .item(), no printing, no synchronize.
The timer synchronizes at the block's two boundaries, so the time counts work done, not work
queued; the progress callback and the stop rule run outside the timed region.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .devices import Timer
from .stats import Measurement

__all__ = ["StopRule", "measure"]


@dataclass(frozen=True)
class StopRule:
    """When to stop timing blocks.

    With `blocks` set, exactly that many. Otherwise keep going until the 95% CI of the median
    is within `target_ci` of it (after at least `min_blocks`), or `max_time` seconds of timed
    blocks have passed, or `max_blocks` were timed: whichever comes first.
    """

    blocks: int | None = None
    warmup: int = 1
    max_time: float = 30.0
    min_blocks: int = 10
    max_blocks: int = 100_000
    target_ci: float = 0.02

    def __post_init__(self) -> None:
        if self.blocks is not None and self.blocks < 1:
            raise ValueError(f"blocks must be 1 or more, got {self.blocks}")
        if self.warmup < 0 or self.max_time <= 0 or self.min_blocks < 1:
            raise ValueError(f"bad stop rule {self}")

    def done(self, samples: list[float], elapsed: float) -> bool:
        """Whether to stop, given the timed samples so far and their total seconds."""
        n = len(samples)
        if self.blocks is not None:
            return n >= self.blocks
        if n >= self.max_blocks or elapsed >= self.max_time:
            return True
        # Checking the CI costs a sort; do it on a geometric schedule, not after every block.
        if n < self.min_blocks or n % max(1, n // 10) != 0:
            return False
        fraction = Measurement(tuple(samples)).time.ci_half_width_fraction
        return fraction is not None and fraction <= self.target_ci


def measure(
    run_block: Callable[[], None],
    new_timer: Callable[[], Timer],
    stop: StopRule,
    on_block: Callable[[int, float], None] | None = None,
) -> Measurement:
    """Run `stop.warmup` warm-up blocks, then timed blocks until `stop` says enough.

    Warm-up blocks are timed the same way (first-step costs such as compilation, cuDNN
    autotuning and allocator growth show there) but kept apart from the samples.
    `on_block(i, seconds)` is called after each block, warm-up included, i counting from 0.
    """
    warmup: list[float] = []
    samples: list[float] = []
    elapsed = 0.0
    while len(warmup) < stop.warmup or not stop.done(samples, elapsed):
        timer = new_timer()
        timer.start()
        run_block()
        timer.stop()
        seconds = timer.elapsed()
        if len(warmup) < stop.warmup:
            warmup.append(seconds)
        else:
            samples.append(seconds)
            elapsed += seconds
        if on_block is not None:
            on_block(len(warmup) + len(samples) - 1, seconds)
    return Measurement(samples=tuple(samples), warmup=tuple(warmup))
