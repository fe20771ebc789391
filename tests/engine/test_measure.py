import pytest

from accelbench.devices import HostTimer
from accelbench.engine.measure import StopRule, measure


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
    m = measure(fake.run_block, fake.timer, StopRule(blocks=3, warmup=2))
    assert m.warmup == (9.0, 8.0)
    assert m.samples == (1.0, 2.0, 3.0)


def test_device_is_synchronized_at_each_boundary_and_never_inside_a_block():
    fake = Recorder([1.0, 1.0])
    measure(fake.run_block, fake.timer, StopRule(blocks=1, warmup=1))
    # each block: sync before reading the start clock, sync after it before reading the end
    assert fake.log == ["sync", "clock", "block", "sync", "clock"] * 2


def test_progress_callback_sees_every_block_after_it_is_timed():
    fake = Recorder([5.0, 1.0, 2.0])
    seen = []
    measure(
        fake.run_block,
        fake.timer,
        StopRule(blocks=2, warmup=1),
        on_block=lambda i, s: seen.append((i, s, fake.log[-1])),
    )
    assert seen == [(0, 5.0, "clock"), (1, 1.0, "clock"), (2, 2.0, "clock")]


@pytest.mark.parametrize(
    "rule", [dict(blocks=0), dict(blocks=-1), dict(warmup=-1), dict(max_time=0), dict(min_blocks=0)]
)
def test_bad_stop_rules_are_refused(rule):
    with pytest.raises(ValueError):
        StopRule(**rule)


def test_adaptive_rule_stops_once_the_ci_is_tight():
    # Perfectly steady blocks: the CI collapses as soon as the minimum count is reached.
    fake = Recorder([0.1] * 1000)
    m = measure(fake.run_block, fake.timer, StopRule(warmup=0, min_blocks=12, max_time=50))
    assert len(m.samples) == 12


def test_adaptive_rule_stops_at_the_time_budget_when_noisy():
    # Alternating 1 s and 3 s blocks never give a CI within 2% of the median.
    fake = Recorder([1.0, 3.0] * 500)
    m = measure(fake.run_block, fake.timer, StopRule(warmup=1, max_time=40))
    assert sum(m.samples) >= 40 and sum(m.samples[:-1]) < 40
    assert m.warmup == (1.0, 3.0)  # the adaptive rule warms up with two blocks at least


def test_adaptive_rule_respects_the_block_cap():
    fake = Recorder([1.0, 3.0] * 500)
    m = measure(fake.run_block, fake.timer, StopRule(warmup=0, max_time=1e9, max_blocks=25))
    assert len(m.samples) == 25


def test_short_blocks_are_grouped_into_samples_that_last_long_enough():
    # 1 ms blocks: the adaptive rule times 25 of them per sample (25 ms), and reports per block.
    fake = Recorder([0.001] * 2000)
    rule = StopRule(warmup=1, min_blocks=10, max_time=100, min_sample_s=0.025)
    m = measure(fake.run_block, fake.timer, rule)
    assert m.repeat == 25
    assert len(m.samples) == 10
    assert m.samples[0] == pytest.approx(0.025)
    assert m.time.median == pytest.approx(0.001)
    assert m.rate.median == pytest.approx(1000)
    # synchronized once per sample, not once per block (after two warm-up blocks)
    assert fake.log.count("sync") == 2 * (2 + 10)


def test_a_fixed_count_never_groups_blocks():
    fake = Recorder([0.001] * 10)
    m = measure(fake.run_block, fake.timer, StopRule(blocks=5, warmup=1))
    assert m.repeat == 1 and len(m.samples) == 5


def test_the_timed_phase_context_encloses_the_timed_samples_only():
    fake = Recorder([5.0, 1.0, 2.0])

    class Phase:
        def __enter__(self):
            fake.log.append("enter")

        def __exit__(self, *exc):
            fake.log.append("exit")

    measure(fake.run_block, fake.timer, StopRule(blocks=2, warmup=1), timed_phase=Phase())
    warmup = ["sync", "clock", "block", "sync", "clock"]
    assert fake.log == warmup + ["enter"] + warmup * 2 + ["exit"]


def test_a_process_that_cannot_reach_the_rate_asked_for_gives_up_after_its_minimum():
    """The search's early stop: 0.5 s a block is 2 blocks/s; the stack asks for more than 2.5."""
    fake = Recorder([0.5] * 40)
    rule = StopRule(warmup=0, max_time=1e9, min_samples=6, min_sample_s=0.0, give_up_rate=2.5)
    m = measure(fake.run_block, fake.timer, rule)
    assert len(m.samples) == 6 and rule.gives_up(m.samples, m.repeat)
    # one sample fast enough keeps it going: its median could still be there
    fake = Recorder([0.5] * 5 + [0.3] + [0.5] * 20)
    rule = StopRule(warmup=0, max_time=10.0, min_samples=6, min_sample_s=0.0, give_up_rate=2.5)
    m = measure(fake.run_block, fake.timer, rule)
    assert len(m.samples) > 6 and not rule.gives_up(m.samples, m.repeat)
    # a count of blocks asked for is timed whole
    fake = Recorder([0.5] * 8)
    m = measure(fake.run_block, fake.timer, StopRule(blocks=8, warmup=0, give_up_rate=2.5))
    assert len(m.samples) == 8
