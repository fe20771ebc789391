"""Several processes per configuration (engine/rounds): each one's share of the timing, the
count the first ones' spread asks for, and how the processes' results become one."""

from __future__ import annotations

import math

import pytest

from accelbench.analysis.facts import DRIFT, Drift, Probe, Rounds
from accelbench.core.levels import RoundPolicy
from accelbench.core.result import Result, RunSpec
from accelbench.core.stats import Measurement
from accelbench.devices.power import POWER, Power
from accelbench.devices.state import MachineState
from accelbench.engine.facts import Overhead
from accelbench.engine.measure import StopRule
from accelbench.engine.rounds import first_rounds, merge, more_rounds, round_stop

SPEC = RunSpec("mlp", "cpu", 8, 1)
ADAPTIVE = StopRule(max_time=12.0)


def _process(rates: list[float], **metrics) -> Result:
    """One process's result: its samples (seconds per block) at these rates."""
    m = Measurement(tuple(1 / r for r in rates), (0.5,), 1)
    return Result(spec=SPEC, status="ok", measurement=m, metrics=metrics)


def _merged(*processes: Result) -> Result:
    result = None
    for pass_no, latest in enumerate(processes, start=1):
        result = merge(result, latest, pass_no)
    assert result is not None
    return result


def test_a_fixed_count_of_its_spreads_evenly_over_the_processes():
    hundred = StopRule(blocks=100)
    assert first_rounds(RoundPolicy(), hundred) == 3
    assert [round_stop(RoundPolicy(), hundred, i).blocks for i in range(3)] == [34, 33, 33]
    assert first_rounds(RoundPolicy(), StopRule(blocks=2)) == 2  # no process without an it
    assert first_rounds(RoundPolicy(fixed=5), hundred) == 5
    assert round_stop(RoundPolicy(fixed=5), hundred, 4).blocks == 20


def test_each_adaptive_process_gets_an_equal_share_of_the_timed_budget():
    share = round_stop(RoundPolicy(), StopRule(max_time=12.0, time_cap=30.0), 5)
    assert share.max_time == 4.0 and share.time_cap == 10.0 and share.blocks is None


def test_processes_that_agree_end_at_the_first_three():
    result = _merged(*(_process([100.0 + i, 100.5, 99.5, 100.0]) for i in range(3)))
    plan = more_rounds(RoundPolicy(), ADAPTIVE, result)
    assert plan.complete and plan.planned == 3 and plan.wanted == 3
    assert "asks for 3" in plan.reason and plan.policy == "adaptive, 3 to 8"


def test_processes_that_disagree_ask_for_more_up_to_the_cap():
    apart = [_process([r] * 4) for r in (90.0, 100.0, 112.0)]
    result = _merged(*apart)
    plan = more_rounds(RoundPolicy(most=6), StopRule(max_time=1000.0), result)
    sd = math.sqrt(sum((math.log(r) - sum(map(math.log, (90, 100, 112))) / 3) ** 2
                       for r in (90, 100, 112)) / 2)  # fmt: skip
    assert plan.wanted == math.ceil((1.96 * sd / 0.02) ** 2) > 6
    assert plan.planned == 6 and not plan.complete and "capped at 6" in plan.reason
    # the count is decided once: the fourth process does not reopen it
    fourth = merge(result, _process([95.0] * 4), 4)
    fourth = Result(**{**vars(fourth), "metrics": {**fourth.metrics, **plan.to_metrics()}})
    assert more_rounds(RoundPolicy(most=6), StopRule(max_time=1000.0), fourth).planned == 6


def test_the_timed_budget_bounds_the_processes_added():
    # three processes of 4 samples at ~0.01 s: 0.12 s used of 0.25, room for three more
    result = _merged(*(_process([r] * 4) for r in (90.0, 100.0, 112.0)))
    plan = more_rounds(RoundPolicy(), StopRule(max_time=0.25), result)
    assert plan.planned == 6 and "the timed budget of 0.25 s allows 6" in plan.reason


def test_a_fixed_count_is_kept_and_a_failed_process_ends_the_plan():
    two = _merged(_process([100.0] * 3), _process([101.0] * 3))
    fixed = more_rounds(RoundPolicy(fixed=2), ADAPTIVE, two)
    assert fixed.complete and fixed.planned == 2 and fixed.reason == "--rounds"
    failed = Result(spec=SPEC, status="timeout", error="no result within --timeout 5 s")
    after = merge(_merged(_process([100.0] * 3)), failed, 2)
    assert after.status == "ok" and after.measurement.processes == 1
    plan = more_rounds(RoundPolicy(), ADAPTIVE, after)
    assert plan.complete and plan.failed == ("process 2: timeout: no result within --timeout 5 s",)


def test_merging_keeps_every_process_apart_and_combines_what_each_recorded():
    first = _process(
        [100.0] * 3,
        **Probe(2, 0.004, 5, steps=(0.004,), paired_steps=(0.0041,)).to_metrics(),
        **MachineState(seconds=1.0, cores=2, other_cpu_cores=0.05).to_metrics(),
        **Overhead.add({}, warmup_s=0.5, timed_s=0.03, probe_s=1.0),
        **{POWER: {"average_watts": 100.0, "joules": 3.0, "seconds": 0.03, "source": "x"}},
        **{DRIFT: {"max_rel_error": 0.0}},
    )
    second = _process(
        [110.0] * 3,
        **Probe(2, 0.005, 5, steps=(0.005,), paired_steps=(0.0052,)).to_metrics(),
        **MachineState(seconds=2.0, cores=2, other_cpu_cores=0.8).to_metrics(),
        **Overhead.add({}, warmup_s=0.25, timed_s=0.027, probe_s=0.5),
        **{POWER: {"average_watts": 200.0, "joules": 5.4, "seconds": 0.027, "source": "x"}},
    )
    merged = _merged(first, second)
    m, facts = merged.measurement, merged.facts
    assert m.rounds == ((3, 1), (3, 1)) and facts.get(Rounds).passes == (1, 2)
    assert m.rate.median == pytest.approx(math.sqrt(100.0 * 110.0))
    assert facts.get(Probe).steps == (0.004, 0.005)
    assert facts.get(Probe).paired_steps == (0.0041, 0.0052)  # each beside its own probe
    assert facts.get(Probe).step_time_s == pytest.approx(math.sqrt(0.004 * 0.005))
    state = facts.get(MachineState)
    assert state.other_cpu_cores == 0.8 and state.seconds == 3.0
    assert facts.get(Overhead).warmup_s == 0.75 and facts.get(Overhead).probe_s == 1.5
    assert facts.get(Power).joules == pytest.approx(8.4)
    assert facts.get(Power).average_watts == pytest.approx(8.4 / 0.057)
    assert facts.get(Drift) is not None  # the first process's once-only figures stay
    assert merged.uid == first.uid


def test_the_first_process_is_marked_as_one_process_of_its_configuration():
    result = merge(None, _process([100.0] * 3), 7)
    assert result.measurement.rounds == ((3, 1),) and result.facts.get(Rounds) == Rounds(
        passes=(7,)
    )
