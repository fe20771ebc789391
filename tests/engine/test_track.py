from dataclasses import replace

import pytest

from accelbench.devices import resolve_devices
from accelbench.devices.cpu import CpuBackend
from accelbench.engine.track import track


class LoggingCpu(CpuBackend):
    """The CPU backend, logging each synchronize so the order of events can be checked."""

    def __init__(self, log):
        self.log = log

    def synchronize(self, index):
        self.log.append("sync")


def test_track_synchronizes_after_each_body_and_keeps_durations():
    log = []
    device = replace(resolve_devices("cpu")[0], backend=LoggingCpu(log))
    seen = []
    for i in track(range(3), device=device, disable=True):
        log.append(f"body{i}")
        seen.append(i)
    assert seen == [0, 1, 2]
    # start: sync; then after every body a sync (stop) and a sync (next start)
    assert log == [
        "sync",
        "body0",
        "sync",
        "sync",
        "body1",
        "sync",
        "sync",
        "body2",
        "sync",
        "sync",
    ]


def test_track_measurement_leaves_the_first_iteration_as_warmup():
    tracked = track(range(4), device="cpu", disable=True)
    for _ in tracked:
        sum(range(1000))
    assert len(tracked.durations) == 4
    m = tracked.measurement
    assert len(m.samples) == 3 and len(m.warmup) == 1
    assert all(s > 0 for s in m.samples)


def test_track_needs_two_iterations_for_a_measurement():
    tracked = track([1], device="cpu", disable=True)
    list(tracked)
    with pytest.raises(ValueError):
        _ = tracked.measurement
