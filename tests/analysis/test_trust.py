"""Trust is data (analysis/trust): each caveat made from what a result recorded, stored with
it, and shown by every output: the console, Markdown, HTML, CSV and --json."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import replace

import pytest

from accelbench.analysis.explanation import EXPLAIN
from accelbench.analysis.facts import Probe, Rounds
from accelbench.analysis.metrics import Analyzer
from accelbench.analysis.trust import Trust, assess, trust_of, with_trust
from accelbench.analysis.verdict import Bottleneck
from accelbench.cli.output import result_json
from accelbench.core.result import Result, RunSpec
from accelbench.core.stats import Measurement
from accelbench.devices import resolve_devices
from accelbench.devices.state import MACHINE_STATE, PROBE_MACHINE_STATE, MachineState
from accelbench.render.console import run_tables
from accelbench.render.html import html_report
from accelbench.render.markdown import markdown_report
from accelbench.render.results_csv import results_csv

SPEC = RunSpec("seed-cnn", "cpu", 64, 20)
BUSY = MachineState(seconds=3.0, cores=2, other_cpu_cores=0.9, other_cpu_busiest=("pid 7 x",))


def _result(processes=((0.5, 0.5, 0.51, 0.5, 0.49, 0.5),) * 3, **metrics) -> Result:
    samples = tuple(s for p in processes for s in p)
    rounds = tuple((len(p), 1) for p in processes)
    m = Measurement(samples, (1.0,) * len(processes), 1, rounds)
    facts = Rounds(passes=tuple(range(1, len(processes) + 1)), planned=len(processes))
    facts = replace(facts, complete=True)
    metrics = {**facts.to_metrics(), **metrics}
    return Result(spec=SPEC, status="ok", measurement=m, metrics=metrics, id=1, sweep="s")


def _kinds(result: Result) -> list[str]:
    return [c.kind for c in assess(result).caveats]


def test_a_quiet_result_of_three_agreeing_processes_has_no_caveat():
    assert assess(_result()).caveats == ()


def test_one_process_is_said_to_bound_nothing_between_processes():
    (caveat,) = [c for c in assess(_result(((0.5,) * 6,))).caveats if c.kind == "processes"]
    assert caveat.text.startswith("1 process: too few to bound the spread between processes")
    legacy = Result(spec=SPEC, status="ok", measurement=Measurement((0.5,) * 6))
    assert "stored by an accelbench that ran one" in assess(legacy).texts[0]


def test_processes_that_disagree_are_a_spread_caveat_and_a_noisy_interval():
    apart = _result(((0.4,) * 6, (0.5,) * 6, (0.6,) * 6))
    kinds = _kinds(apart)
    assert "spread" in kinds and "noise" in kinds
    spread = next(c for c in assess(apart).caveats if c.kind == "spread")
    assert "more processes, not longer ones" in spread.text


def test_a_busy_machine_is_decisive_and_a_little_load_is_not():
    busy = assess(_result(**BUSY.to_metrics()))
    (caveat,) = busy.decisive
    assert caveat.kind == "machine" and "pid 7 x" in caveat.text
    light = replace(BUSY, other_cpu_cores=0.2)
    assert assess(_result(**light.to_metrics())).caveats[0].decisive is False
    hot = MachineState(seconds=1.0, throttle_reasons=("HW slowdown",))
    assert assess(_result(**hot.to_metrics())).decisive


def test_failed_and_missing_processes_and_untried_platforms_are_said():
    rounds = Rounds(passes=(1, 2), planned=3, failed=("process 3: timeout: no result",))
    failed = _result(((0.5,) * 6,) * 2, **rounds.to_metrics())
    assert "process 3: timeout: no result; the other processes' samples stand" in trust_of(
        failed
    ).texts
    interrupted = _result(((0.5,) * 6,) * 2, **Rounds(passes=(1, 2), planned=3).to_metrics())
    assert any("--resume" in text for text in assess(interrupted).texts)
    mac = replace(_result(), environment={"caveat": "MPS: not executed by the developers"})
    assert assess(mac).texts == ["MPS: not executed by the developers"]


def test_stored_caveats_are_read_back_and_older_results_get_theirs_made():
    busy = with_trust(_result(**BUSY.to_metrics()))
    stored = Trust.from_metrics(busy.metrics)
    assert stored == assess(busy) and trust_of(busy) == stored
    assert MACHINE_STATE in busy.metrics
    older = _result(**BUSY.to_metrics())  # no "trust" group: made when read
    assert trust_of(older) == stored


def test_a_decisive_caveat_makes_the_verdict_undetermined():
    step = 0.5 / 20 / 1.05  # the probe's step: 4x the batch takes 1.05x the time
    probe = Probe(16, step, 18, steps=(step,) * 3, growth=(1.04, 1.05, 1.06)).to_metrics()
    cpu = resolve_devices("cpu")[0]
    quiet = Analyzer()(_result(**probe), cpu).facts.get(Bottleneck)
    assert quiet.kind == "launch-bound" and "over 3 processes" in quiet.explanation
    busy = Analyzer()(_result(**probe, **BUSY.to_metrics()), cpu).facts.get(Bottleneck)
    assert busy.kind == "undetermined" and "other processes used 0.9 cores" in busy.explanation
    # issue 27 item 7: busy only while the two batches alternated (batch 8 took 520 ms, 32
    # took 482 ms with one other process on a 2-core machine: "launch-bound", wrongly)
    during = BUSY.to_metrics(PROBE_MACHINE_STATE)
    probed = Analyzer()(_result(**probe, **during), cpu).facts.get(Bottleneck)
    assert probed.kind == "undetermined"
    assert "other processes used 0.9 cores during the verdict's probe" in probed.explanation
    assert not assess(_result(**probe, **during)).decisive  # the samples themselves were quiet


def test_each_process_s_probe_state_is_kept_at_its_worst():
    from accelbench.engine.rounds import merge

    light = replace(BUSY, other_cpu_cores=0.05)
    first = _result(((0.5,) * 6,), **light.to_metrics(PROBE_MACHINE_STATE))
    second = _result(((0.5,) * 6,), **BUSY.to_metrics(PROBE_MACHINE_STATE))
    merged = merge(merge(None, first, 1), second, 2)
    state = merged.facts.get(MachineState, PROBE_MACHINE_STATE)
    assert state is not None and state.other_cpu_cores == 0.9 and state.seconds == 6.0


@pytest.fixture
def busy_result() -> Result:
    return with_trust(_result(**BUSY.to_metrics()))


def test_every_output_carries_the_caveats(busy_result):
    text = "other processes used 0.9 cores during the timed samples"
    assert text in run_tables([busy_result], width=400)
    assert text in markdown_report([busy_result])
    assert text in html_report([busy_result])
    (row,) = csv.DictReader(io.StringIO(results_csv([busy_result])))
    assert text in row["caveats"] and row["measured_processes"] == "3"
    shown = json.loads(json.dumps(result_json(busy_result)))
    assert shown["caveats"][0]["decisive"] is True and text in shown["caveats"][0]["text"]
    assert shown["processes"] == 3 and shown["spread"]["processes"] == 3


def test_a_stored_profile_of_the_same_configuration_is_the_verdicts_first_witness():
    """run's verdict takes explain's busy share where the step was profiled before (seed 000's
    model on the H200: the device busy about a fifth of the step)."""
    step = 0.5 / 20 / 1.05
    probe = Probe(16, step, 18, steps=(step,) * 3, growth=(1.04, 1.05, 1.06)).to_metrics()
    profiled = {"activity": "cuda", "steps": 5, "profiled_step_s": 0.03, "measured_step_s": 0.025,
                "device_busy_s": 0.005, "kernels_per_step": 40, "kernel_s": 0.005}  # fmt: skip
    witness = replace(_result(), id=7, metrics={EXPLAIN: profiled})
    cpu = resolve_devices("cpu")[0]
    verdict = Analyzer()(_result(**probe), cpu, witness).facts.get(Bottleneck)
    assert verdict.kind == "launch-bound"
    assert "the device was busy 20% of the step (explain's profile, result #7)" in (
        verdict.explanation
    )
    assert "the batch probe agrees" in verdict.explanation


def test_a_count_of_cores_takes_the_noun_that_fits_it():
    """Issue 37 item 11: "1 cores" no more; the figures themselves are unchanged."""
    from accelbench.analysis.trust import machine_caveats

    one = MachineState(seconds=2.0, cores=1, load_average_1m=1.5, other_cpu_cores=1.0)
    texts = " | ".join(c.text for c in machine_caveats(one))
    assert "other processes used 1 core during" in texts
    assert "load average was 1.5 (this benchmark's threads included), above the 1 core:" in texts
    two = MachineState(seconds=2.0, cores=16, other_cpu_cores=2.04, steal_cores=1.5)
    texts = " | ".join(c.text for c in machine_caveats(two))
    assert "other processes used 2 cores during" in texts
    assert "other guests on 1.5 cores' worth" in texts
    assert " 1 cores" not in texts
