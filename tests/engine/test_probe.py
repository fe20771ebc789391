"""The verdict's probe (engine/probe): samples at the batch and at a quarter of it timed in
alternation, each adjacent pair one ratio, so a host that speeds up or slows down moves both."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from accelbench.core.facts import Facts
from accelbench.core.result import RunSpec
from accelbench.devices.state import PROBE_MACHINE_STATE, MachineState
from accelbench.engine import probe as probing
from accelbench.engine.measure import StopRule
from accelbench.engine.rounds import Round


@dataclass
class _Clock:
    now: float = 0.0
    speed: float = 1.0  # the host: every step takes 1/speed of its own time
    order: list[str] = field(default_factory=list)


class _Timer:
    def __init__(self, clock: _Clock, name: str) -> None:
        self.clock, self.name = clock, name

    def start(self) -> None:
        self.clock.order.append(self.name)  # which side each timed sample was
        self.began = self.clock.now

    def stop(self) -> None:
        self.ended = self.clock.now

    def elapsed(self) -> float:
        return self.ended - self.began


class _Prep:
    """A configuration whose step takes `step_s` seconds on a fake clock."""

    def __init__(self, name: str, step_s: float, clock: _Clock, batch: int) -> None:
        self.name, self.step_s, self.clock = name, step_s, clock
        self.spec = RunSpec("mlp", "cpu", batch, 4)

    def step(self) -> None:
        self.clock.now += self.step_s / self.clock.speed
        self.clock.speed *= 1.01  # the host drifts, faster and faster

    def timer(self) -> _Timer:
        return _Timer(self.clock, self.name)


def test_pairs_alternate_abba_and_each_gives_the_ratio_of_its_two_samples():
    clock = _Clock()
    main, probe = _Prep("main", 0.012, clock, 64), _Prep("probe", 0.010, clock, 16)
    rule = StopRule(warmup=1, max_time=0.5, min_sample_s=0.05)
    pairs = probing._pairs(main, probe, main_step_s=0.012, rule=rule)
    assert len(pairs) >= probing.MIN_PAIRS
    # after the probe's warm-up steps (one block's four): main, probe, then probe, main...
    assert clock.order[:4] == ["probe"] * 4
    assert clock.order[4:12] == ["main", "probe", "probe", "main"] * 2
    ratios = [m / p for m, p in pairs]
    # the host sped up by over 2x over the pairs; each ratio stays near 1.2 all the same
    assert clock.speed > 2
    assert all(r == pytest.approx(1.2, rel=0.1) for r in ratios)


class _Meter:
    """A state meter that reads the host busy over its region, whatever runs in it."""

    def __enter__(self) -> _Meter:
        self.state = None
        return self

    def __exit__(self, *exc: object) -> None:
        self.state = MachineState(seconds=2.0, cores=2, other_cpu_cores=0.9)


class _Device:
    def state_meter(self) -> _Meter:
        return _Meter()


def test_the_probe_records_its_step_and_ratio_for_the_verdict(monkeypatch):
    clock = _Clock()
    main, probe = _Prep("main", 0.012, clock, 64), _Prep("probe", 0.010, clock, 16)
    monkeypatch.setattr(probing, "build", lambda spec, workload, device: probe)
    process = Round(1, StopRule(), planned=2)
    metrics = probing.paired_probe(main, None, _Device(), 0.012, process)
    found = metrics["probe"]
    assert found["batch_size"] == 16 and found["blocks"] >= probing.MIN_PAIRS
    assert found["growth"][0] == pytest.approx(1.2, rel=0.1)
    assert found["growth_ci_low"] <= found["growth"][0] <= found["growth_ci_high"]
    # the step at the batch over the same pairs, which the verdict shows beside the probe's:
    # both sides' medians sped up with the host (under 12 and 10 ms), their ratio near the
    # pairs' (not equal: on a host 1% faster each step, each side's median is another pair's)
    (paired,), (step,) = found["paired_steps"], found["steps"]
    assert paired < 0.012 and step < 0.010
    assert paired / step == pytest.approx(found["growth"][0], rel=0.15)
    # what else ran while the two sides alternated is the verdict's to weigh (issue 27)
    state = Facts(metrics).get(MachineState, PROBE_MACHINE_STATE)
    assert state is not None and state.other_cpu_cores == 0.9


def test_a_probe_that_cannot_build_says_why_and_the_result_stands(monkeypatch):
    def fail(spec, workload, device):
        raise RuntimeError("CUDA out of memory")

    monkeypatch.setattr(probing, "build", fail)
    main = _Prep("main", 0.01, _Clock(), 64)
    found = probing.paired_probe(main, None, None, 0.01, Round(0, StopRule(), planned=1))
    assert found == {"probe_error": "RuntimeError: CUDA out of memory"}
    assert probing.paired_probe(_Prep("main", 0.01, _Clock(), 1), None, None, 0.01,
                                Round(0, StopRule(), planned=1)) == {}  # fmt: skip
