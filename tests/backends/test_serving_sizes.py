"""backends/serving: how LoadGen's runs are sized from the warm batches' times: Offline's first
run expects at most 50,000 QPS, MultiStream's expected latency is floored at 0.1 ms (a session
that records the tests stands in for LoadGen, so only the sizing is under test)."""

from __future__ import annotations

from accelbench.backends.loadgen import LoadResult, LoadTest
from accelbench.backends.serving import (
    OFFLINE_FIRST_QPS,
    ScenarioRun,
    ServeSettings,
    Warm,
    _scenarios,
)


class _Recorder:
    """A session whose every run is VALID at `qps`; the tests it was given, in order."""

    def __init__(self, settings: ServeSettings, qps: float) -> None:
        self.settings, self.qps, self.tests = settings, qps, []

    def test(self, scenario: str, **values) -> LoadTest:
        s = self.settings
        return LoadTest(scenario, s.duration_s, s.min_queries, s.max_batch, **values)

    def run(self, test: LoadTest) -> ScenarioRun:
        self.tests.append(test)
        latency = dict.fromkeys(("50.00", "90.00", "99.00"), 0.001)
        result = LoadResult(test.scenario, test.target_qps, True, (), self.qps, latency,
                            100, 100, 0, 0, "")  # fmt: skip
        return ScenarioRun(result, {1: 100})


def test_offline_first_expects_at_most_50000_qps_however_fast_the_warm_batch():
    session = _Recorder(ServeSettings(scenarios=("offline",), max_batch=128), qps=40_000.0)
    _scenarios(session, Warm(single_s=1e-5, full_s=4e-5))  # 3.2 million/s
    (offline,) = session.tests
    assert offline.target_qps == OFFLINE_FIRST_QPS == 50_000.0


def test_a_slow_models_offline_expects_its_own_rate():
    session = _Recorder(ServeSettings(scenarios=("offline",), max_batch=64), qps=100.0)
    _scenarios(session, Warm(single_s=0.01, full_s=0.64))
    assert [t.target_qps for t in session.tests] == [100.0]


def test_multistream_expects_at_least_a_tenth_of_a_millisecond_in_groups_of_8():
    session = _Recorder(ServeSettings(scenarios=("multistream",), max_batch=16), qps=0.0)
    _scenarios(session, Warm(single_s=1e-6, full_s=2e-6, group_s=1.5e-6))
    (multi,) = session.tests
    assert multi.scenario == "multistream" and multi.samples_per_query == 8
    assert multi.expected_latency_s == 1e-4
    slower = _Recorder(ServeSettings(scenarios=("multistream",), max_batch=16), qps=0.0)
    _scenarios(slower, Warm(single_s=0.001, full_s=0.004, group_s=0.002))
    assert slower.tests[0].expected_latency_s == 0.002
