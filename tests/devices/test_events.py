"""devices: an event recorded after queued work, asked without waiting whether that work has
finished (the batcher reads its pipe meanwhile). The CPU's is real; CUDA's, XPU's and MPS's
cannot run here, so fakes of torch's documented calls show which calls each makes."""

from __future__ import annotations

import torch

from accelbench.devices import resolve_devices
from accelbench.devices.base import SyncedEvent
from accelbench.devices.cuda import CudaBackend
from accelbench.devices.mps import MpsBackend
from accelbench.devices.xpu import XpuBackend


def test_the_cpus_event_says_its_work_is_done_once_the_call_has_returned():
    cpu = resolve_devices("cpu")[0]
    x = torch.ones(64, 64)
    y = x @ x  # done when it returns: the CPU has no queue
    event = cpu.record_event()
    assert event.query() is True
    event.synchronize()
    assert float(y[0, 0]) == 64.0


def test_a_device_without_events_waits_for_the_device_when_asked():
    calls: list[str] = []
    event = SyncedEvent(lambda: calls.append("synchronize"))
    assert calls == []  # recording waits for nothing
    assert event.query() is True and calls == ["synchronize"]


class _FakeEvent:
    def __init__(self, calls: list[str]) -> None:
        self.calls = calls

    def record(self, stream: object) -> None:
        self.calls.append(f"record on {stream}")

    def query(self) -> bool:
        return False

    def synchronize(self) -> None: ...


def test_cuda_records_a_timing_free_event_on_the_devices_current_stream(monkeypatch):
    calls: list[str] = []

    def event(**options: object) -> _FakeEvent:
        calls.append(f"event {options}")
        return _FakeEvent(calls)

    monkeypatch.setattr(torch.cuda, "Event", event)
    monkeypatch.setattr(torch.cuda, "current_stream", lambda index: f"stream {index}")
    recorded = CudaBackend().record_event(1)
    assert calls == ["event {}", "record on stream 1"]
    assert recorded.query() is False  # asked, not waited for


def test_xpu_records_its_event_on_the_devices_current_stream(monkeypatch):
    calls: list[str] = []
    monkeypatch.setattr(torch.xpu, "Event", lambda: _FakeEvent(calls))
    monkeypatch.setattr(torch.xpu, "current_stream", lambda index: f"stream {index}")
    assert XpuBackend().record_event(0).query() is False
    assert calls == ["record on stream 0"]


def test_mps_never_uses_torch_mps_events_and_waits_for_the_device_instead(monkeypatch):
    calls: list[str] = []

    def no_events(**_: object) -> None:
        raise AssertionError("torch.mps.event.Event must not be asked (pytorch#196395)")

    monkeypatch.setattr(torch.mps.event, "Event", no_events)
    monkeypatch.setattr(torch.mps, "synchronize", lambda: calls.append("synchronize"))
    event = MpsBackend().record_event(0)
    assert event.query() is True and calls == ["synchronize"]
