import pytest

from accelbench.devices import HostTimer
from accelbench.measure import measure


class Recorder:
    """A fake device: a clock that only moves when a block runs, and a log of every call."""

    def __init__(self, block_seconds):
        self.now = 0.0
        self.block_seconds = list(block_seconds)
        self.log = []

    def clock(self):
        self.log.append("clock")
        return self.now

    def synchronize(self):
        self.log.append("sync")

    def run_block(self):
        self.log.append("block")
        self.now += self.block_seconds.pop(0)

    def timer(self):
        return HostTimer(self.synchronize, self.clock)


def test_samples_are_the_injected_durations_with_warmup_kept_apart():
    fake = Recorder([9.0, 8.0, 1.0, 2.0, 3.0])
    m = measure(fake.run_block, fake.timer, blocks=3, warmup=2)
    assert m.warmup == (9.0, 8.0)
    assert m.samples == (1.0, 2.0, 3.0)


def test_device_is_synchronized_at_each_boundary_and_never_inside_a_block():
    fake = Recorder([1.0, 1.0])
    measure(fake.run_block, fake.timer, blocks=1, warmup=1)
    # each block: sync before reading the start clock, sync after it before reading the end
    assert fake.log == ["sync", "clock", "block", "sync", "clock"] * 2


def test_progress_callback_sees_every_block_after_it_is_timed():
    fake = Recorder([5.0, 1.0, 2.0])
    seen = []
    measure(
        fake.run_block,
        fake.timer,
        blocks=2,
        warmup=1,
        on_block=lambda i, s: seen.append((i, s, fake.log[-1])),
    )
    assert seen == [(0, 5.0, "clock"), (1, 1.0, "clock"), (2, 2.0, "clock")]


@pytest.mark.parametrize("blocks, warmup", [(0, 1), (-1, 0), (3, -1)])
def test_bad_counts_are_refused(blocks, warmup):
    fake = Recorder([])
    with pytest.raises(ValueError):
        measure(fake.run_block, fake.timer, blocks=blocks, warmup=warmup)
