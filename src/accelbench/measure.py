"""The timing loop: warm-up, then timed blocks, each bounded by synchronizing timers.

A block is one "it" in seed 000's sense (an epoch of steps). The steps inside a block run
back to back with nothing that waits for the device: no .item(), no printing, no synchronize.
The timer synchronizes at the block's two boundaries, so the time counts work done, not work
queued, and the progress callback runs outside the timed region.
"""

from __future__ import annotations

from collections.abc import Callable

from .devices import Timer
from .stats import Measurement

__all__ = ["measure"]


def measure(
    run_block: Callable[[], None],
    new_timer: Callable[[], Timer],
    blocks: int,
    warmup: int = 1,
    on_block: Callable[[int, float], None] | None = None,
) -> Measurement:
    """Run `warmup` untimed-for-statistics blocks, then `blocks` timed ones.

    Warm-up blocks are timed the same way (first-step costs such as cuDNN autotuning and
    allocator growth show there) but kept apart from the samples. `on_block(i, seconds)` is
    called after each block, warm-up included, with i counting from 0 across both.
    """
    if blocks < 1 or warmup < 0:
        raise ValueError(f"need blocks >= 1 and warmup >= 0, got {blocks} and {warmup}")
    durations = []
    for i in range(warmup + blocks):
        timer = new_timer()
        timer.start()
        run_block()
        timer.stop()
        seconds = timer.elapsed()
        durations.append(seconds)
        if on_block is not None:
            on_block(i, seconds)
    return Measurement(samples=tuple(durations[warmup:]), warmup=tuple(durations[:warmup]))
