"""History: prediction intervals over earlier runs of a configuration on a machine, and the
gate that judges a run against them (analysis/history), built from synthetic Results."""

import math
from datetime import datetime, timedelta, timezone

import numpy as np
import pytest
from scipy import stats

from accelbench.analysis.facts import Verification
from accelbench.analysis.history import (
    MIN_HISTORY,
    History,
    Run,
    histories,
    history_before,
    judge,
    judge_run,
    predict,
    runs_needed,
)
from accelbench.core.result import Result, RunSpec
from accelbench.core.stats import Measurement

SPEC = RunSpec("seed-cnn", "cpu", 64, 20)
START = datetime(2026, 12, 1, tzinfo=timezone.utc)


def _run(seconds, index, rng, machine="box", spec=SPEC, noise=0.01, processes=3, uid=None):
    """One run: `processes` processes of ten samples each around `seconds` a block, made
    `index` minutes after START."""
    samples = tuple(seconds * (1 + noise * rng.standard_normal(10 * processes)))
    return Result(
        spec=spec,
        status="ok",
        measurement=Measurement(samples, (), 1, ((10, 0),) * processes),
        environment={"host": machine, "machine": machine},
        created_at=(START + timedelta(minutes=index)).isoformat(timespec="seconds"),
        sweep="same-command",  # a rerun of one command: one sweep, a new result each time
        id=index + 1,
        **({"uid": uid} if uid else {}),
    )


def _history(run_seconds, rng, **kwargs):
    return [_run(s, i, rng, **kwargs) for i, s in enumerate(run_seconds)]


def _judged(earlier, candidate, threshold=0.05):
    return judge(candidate, history_before(candidate, histories(earlier + [candidate])), threshold)


def test_the_prediction_interval_is_students_t_over_the_earlier_runs():
    rates = [100.0, 104.0, 97.0, 101.0, 99.0, 103.0]
    found = predict(rates)
    logs = np.log(rates)
    half = stats.t.ppf(0.975, 5) * logs.std(ddof=1) * math.sqrt(1 + 1 / 6)
    assert found.center == pytest.approx(math.exp(logs.mean()))
    assert found.low == pytest.approx(math.exp(logs.mean() - half))
    assert found.high == pytest.approx(math.exp(logs.mean() + half))
    assert found.slowdown == pytest.approx(1 - math.exp(-half), rel=1e-4)
    assert found.speedup == pytest.approx(math.exp(half) - 1, rel=1e-4)
    assert predict(rates[: MIN_HISTORY - 1]) is None


def test_a_run_rate_is_the_geometric_mean_of_its_process_medians():
    rng = np.random.default_rng(1)
    r = _run(0.1, 0, rng)
    medians = [np.median([1 / x for x in p.samples]) for p in r.measurement.per_process]
    run = Run.of(r)
    assert run.rate == pytest.approx(math.exp(np.mean(np.log(medians))) * 64 * 20)
    assert run.low < run.rate < run.high


def test_a_stable_history_catches_a_ten_percent_slowdown():
    rng = np.random.default_rng(2)
    earlier = _history([0.1 * (1 + 0.01 * rng.standard_normal()) for _ in range(10)], rng)
    verdict = _judged(earlier, _run(0.11, 20, rng))  # 10% more time: ~9% fewer samples/s
    assert verdict.verdict == "REGRESSION" and "slower, below the history's interval" in verdict.why
    assert verdict.change == pytest.approx(-1 / 11, abs=0.01)
    same = _judged(earlier, _run(0.1, 20, rng))
    assert same.verdict == "ok" and same.history.prediction.slowdown < 0.05
    assert _judged(earlier, _run(0.08, 20, rng)).verdict == "faster"
    slightly = _judged(earlier, _run(0.103, 20, rng))  # below the band, within the threshold
    assert slightly.verdict == "ok" and "below the interval but within 5%" in slightly.why


def test_a_noisy_history_is_undetermined_and_prints_what_it_can_detect():
    rng = np.random.default_rng(3)
    seconds = [0.1 * math.exp(0.15 * x) for x in rng.standard_normal(10)]  # runs 15% apart
    verdict = _judged(_history(seconds, rng), _run(0.1, 20, rng))
    found = verdict.history.prediction
    assert verdict.verdict == "undetermined" and found.slowdown > 0.2
    assert f"detects only a slowdown of {found.slowdown:.1%} or more, not 5%" in verdict.why
    assert "no number of runs would at this spread" in verdict.why  # 1.96 × 15% > 5%
    assert "run --min-gap" in verdict.why and "quieter machine" in verdict.why


def test_a_moderately_noisy_history_says_how_many_runs_would_decide():
    needed = runs_needed(0.02, 0.05)  # 2% between runs: 1.96 × 2% < 5.1%, so some n will do
    t = stats.t.ppf(0.975, needed - 1) * 0.02 * math.sqrt(1 + 1 / needed)
    t_before = stats.t.ppf(0.975, needed - 2) * 0.02 * math.sqrt(1 + 1 / (needed - 1))
    assert t <= -math.log(0.95) < t_before
    assert runs_needed(0.03, 0.05) is None  # 1.96 × 3% > 5.1%


def test_too_few_runs_is_undetermined_with_the_runs_needed():
    rng = np.random.default_rng(4)
    verdict = _judged(_history([0.1] * 3, rng), _run(0.2, 20, rng))  # even twice as slow
    assert verdict.verdict == "undetermined"
    assert verdict.why == f"3 earlier runs, needs {MIN_HISTORY}"


def test_history_is_one_configuration_on_one_machine_before_the_candidate():
    rng = np.random.default_rng(5)
    mine = _history([0.1] * 6, rng)
    elsewhere = [_run(0.5, i, rng, machine="other") for i in range(6)]
    other_spec = [_run(0.5, i, rng, spec=RunSpec("seed-cnn", "cpu", 32, 20)) for i in range(6)]
    later = [_run(0.5, 30 + i, rng) for i in range(3)]
    verify = Result(
        spec=SPEC, status="ok", measurement=Measurement((0.5,) * 10),
        environment={"machine": "box"}, created_at=mine[0].created_at,
        metrics=Verification(verdict="holds").to_metrics(),
    )  # fmt: skip
    failed = Result(
        spec=SPEC, status="oom", environment={"machine": "box"}, created_at=START.isoformat()
    )
    candidate = _run(0.1, 20, rng)
    grouped = histories(mine + elsewhere + other_spec + later + [verify, failed, candidate])
    found = history_before(candidate, grouped)
    assert [r.result.uid for r in found.runs] == [r.uid for r in mine]
    assert len(history_before(candidate, grouped, window=5).runs) == 5  # the last five
    assert history_before(candidate, grouped, window=5).runs[0].result.uid == mine[1].uid


def test_judge_run_takes_each_configurations_newest_result_of_the_run():
    rng = np.random.default_rng(6)
    earlier = _history([0.1] * 6, rng)
    older, newer = _run(0.1, 20, rng), _run(0.12, 21, rng)  # one sweep run twice
    (judged,) = judge_run([newer, older], earlier + [older, newer], 0.05, window=20)
    assert judged.candidate is newer and len(judged.history.runs) == 7  # older is history now
    assert judged.verdict == "REGRESSION"


def test_a_failure_where_earlier_runs_measured_is_a_regression():
    rng = np.random.default_rng(7)
    failed = Result(
        spec=SPEC, status="oom", error="out of memory", environment={"machine": "box"},
        created_at=(START + timedelta(hours=1)).isoformat(timespec="seconds"),
    )  # fmt: skip
    verdict = _judged(_history([0.1] * 6, rng), failed)
    assert verdict.verdict == "REGRESSION" and "oom where earlier runs measured" in verdict.why
    alone = judge(failed, History(SPEC, "box", ()), 0.05)
    assert alone.verdict == "undetermined"


def test_a_a_twenty_runs_of_one_distribution_fire_at_most_once():
    """A/A: each of 20 runs, drawn alike, against the runs before it; a 95% band fires on
    about 1 in 20 of the judged ones by design, and the gate also needs the threshold."""
    rng = np.random.default_rng(11)
    runs = _history([0.1 * math.exp(0.01 * x) for x in rng.standard_normal(20)], rng)
    verdicts = [judge(r, history_before(r, histories(runs)), 0.05).verdict for r in runs]
    assert verdicts.count("REGRESSION") <= 1
    assert verdicts[:MIN_HISTORY] == ["undetermined"] * MIN_HISTORY
    assert set(verdicts[MIN_HISTORY:]) <= {"ok", "faster", "REGRESSION"}


def test_the_prediction_interval_holds_the_next_run_about_95_percent_of_the_time():
    """Coverage: many simulated histories of 10 runs and a next run, all normal on the log
    scale; the interval must hold the next run close to 95% (not 70%, as a CI of the mean
    would)."""
    rng = np.random.default_rng(12)
    held = 0
    trials = 2000
    for _ in range(trials):
        logs = 0.05 * rng.standard_normal(11)
        found = predict(np.exp(logs[:10]).tolist())
        held += found.holds(math.exp(logs[10]))
    assert 0.93 < held / trials < 0.97
