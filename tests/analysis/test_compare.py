"""Comparisons: intervals over processes with known answers, grouping, and the regression
gate (tests/core/test_levels.py simulates their coverage)."""

import csv
import io
import json
from dataclasses import replace

import numpy as np
import pytest

from accelbench.analysis.compare import compare, compare_runs, speedup
from accelbench.analysis.facts import Rounds
from accelbench.core.result import Result, RunSpec
from accelbench.core.stats import Measurement
from accelbench.errors import UsageError
from accelbench.levers import find_dimension
from accelbench.store.db import Store
from tests.conftest import run_cli

RNG = np.random.default_rng(7)


def _result(seconds, device="cpu", precision="fp32", host="laptop", sweep="s1", noise=0.02):
    """Three processes of ten samples each, run in passes 1 to 3 of `sweep`."""
    samples = tuple(seconds * (1 + noise * RNG.standard_normal(30)))
    return Result(
        spec=RunSpec("seed-cnn", device, 64, 20, precision=precision),
        status="ok",
        measurement=Measurement(samples, (), 1, ((10, 0),) * 3),
        environment={"host": host, "machine": host},
        sweep=sweep,
        metrics=Rounds(passes=(1, 2, 3), planned=3, complete=True).to_metrics(),
    )


def test_twice_as_fast_is_significant_and_near_two():
    s = speedup(_result(0.5), _result(1.0))  # one sweep: paired pass by pass
    assert s.ratio == pytest.approx(2.0, rel=0.03) and s.method.startswith("paired")
    assert 1.9 < s.low < s.ratio < s.high < 2.1
    assert s.significant and "(n.s.)" not in s.text()
    apart = speedup(_result(0.5, sweep="a"), _result(1.0, sweep="b"))
    assert apart.method.startswith("unpaired") and apart.significant


def test_the_same_distribution_is_not_significant():
    base = _result(1.0, noise=0.05)
    same = Result(
        spec=base.spec,
        status="ok",
        measurement=Measurement(
            tuple(reversed(base.measurement.samples)), (), 1, base.measurement.rounds
        ),
        sweep="s2",
        metrics=base.metrics,
    )
    s = speedup(same, base)
    assert s.ratio == pytest.approx(1.0, rel=0.01)
    assert s.low < 1.0 < s.high and not s.significant
    assert s.text().endswith("(n.s.)")


def test_a_small_difference_inside_the_noise_is_rarely_significant():
    found = [speedup(_result(0.99, noise=0.2), _result(1.0, noise=0.2)) for _ in range(40)]
    assert sum(s.significant for s in found) <= 4  # a 95% interval: about 2 of 40


def test_compare_by_device_uses_the_cpu_as_baseline_within_each_configuration():
    results = [
        _result(0.1, device="cuda:0"),
        _result(1.0, device="cpu"),
        _result(0.2, device="cuda:0", precision="bf16"),
        _result(2.0, precision="bf16"),
    ]
    rows = compare(results, find_dimension("device")).rows
    versus = {(r.result.spec.precision, r.value): r.speedup for r in rows}
    assert versus[("fp32", "cpu")] is None  # the baseline itself
    assert versus[("fp32", "cuda:0")].ratio == pytest.approx(10, rel=0.05)
    assert versus[("bf16", "cuda:0")].ratio == pytest.approx(10, rel=0.05)


def test_devices_on_two_machines_are_told_apart():
    rows = compare(
        [_result(1.0, host="laptop"), _result(0.5, host="server")], find_dimension("device")
    ).rows
    assert sorted(r.value for r in rows) == ["laptop/cpu", "server/cpu"]


def test_compare_by_batch_uses_samples_per_second_in_numeric_order():
    small = _result(0.1)  # batch 64: 10 it/s = 12,800 samples/s (20 steps of 64)
    big = Result(
        spec=RunSpec("seed-cnn", "cpu", 128, 20),
        status="ok",
        measurement=Measurement(tuple(0.15 * (1 + 0.01 * i) for i in range(10))),
        environment={"host": "laptop", "machine": "laptop"},
    )
    rows = compare([big, small], find_dimension("batch")).rows
    assert [r.value for r in rows] == ["64", "128"]  # 64 first: numbers, not text, order
    big_rate = 128 / (0.15 * 1.045)  # the median of its ten samples
    assert rows[1].speedup.ratio == pytest.approx(big_rate / (64 / 0.1), rel=0.03)


def test_unknown_dimension():
    with pytest.raises(UsageError, match="cannot compare by 'colour'; valid: device"):
        find_dimension("colour")


def test_compare_runs_flags_only_significant_slowdowns_past_the_threshold():
    base = [_result(1.0, sweep="a"), _result(1.0, precision="bf16", sweep="a")]
    cand = [_result(1.25, sweep="b"), _result(1.01, precision="bf16", sweep="b")]
    changes = compare_runs(base, cand, threshold=0.05)  # 20% slower; 1% slower
    flagged = {c.spec.precision: c.regression for c in changes}
    assert flagged == {"fp32": True, "bf16": False}
    assert [c.verdict for c in changes] == ["REGRESSION", "ok"]


def _apart(levels, sweep):
    """Three processes whose own levels (seconds a block) differ: a noisy host."""
    samples = tuple(level * (1 + 0.001 * i) for level in levels for i in range(10))
    return replace(
        _result(1.0, sweep=sweep), measurement=Measurement(samples, (), 1, ((10, 0),) * 3)
    )


NOISY_BEFORE, NOISY_AFTER = (1.0, 2.0, 0.6), (1.5, 3.4, 1.0)  # about 0.6x, not significant


def test_an_interval_that_cannot_rule_out_the_threshold_is_undetermined_not_ok():
    """Issue 37 item 1: 0.59x [0.04–8.38] (n.s.) was "ok"; a pass must rule out a slowdown."""
    noisy_base, noisy_cand = [_apart(NOISY_BEFORE, "a")], [_apart(NOISY_AFTER, "b")]
    (change,) = compare_runs(noisy_base, noisy_cand, threshold=0.05)
    assert not change.speedup.significant and change.speedup.low < 0.95
    assert change.verdict == "undetermined" and not change.regression
    assert change.detectable == pytest.approx(1 - change.speedup.low / change.speedup.ratio)
    assert f"detects only a slowdown of {change.detectable:.1%} or more, not 5%" in change.why
    assert "more processes (run --rounds)" in change.why
    # a tight interval whose low end clears 1 − threshold is a pass, even when n.s.
    (tight,) = compare_runs([_result(1.0, sweep="a")], [_result(1.01, sweep="b")], 0.05)
    assert tight.speedup.low >= 0.95 and tight.verdict == "ok" and tight.why == ""
    (quicker,) = compare_runs([_result(1.0, sweep="a")], [_result(0.8, sweep="b")], 0.05)
    assert quicker.verdict == "faster"


def test_cli_gate_exits_3_when_undetermined_and_says_why(tmp_path):
    db = tmp_path / "r.db"
    with Store(db) as store:
        store.save(_apart(NOISY_BEFORE, "before"))
        store.save(_apart(NOISY_AFTER, "after"))
    out = run_cli("compare", "--baseline", "before", "--candidate", "after", "--db", str(db))
    assert out.returncode == 3, out.stderr
    assert "undetermined (1)" in out.stdout and "(1) this data detects only a slowdown" in (
        " ".join(out.stdout.split())
    )
    found = json.loads(
        run_cli(
            "compare", "--baseline", "before", "--candidate", "after", "--json", "--db", str(db)
        ).stdout
    )
    assert found[0]["verdict"] == "undetermined" and found[0]["detectable_slowdown"] > 0.05
    helped = run_cli("compare", "--help")
    assert "3 no regression, but some configuration undetermined" in " ".join(helped.stdout.split())


def test_a_gate_on_single_process_results_is_undetermined_not_a_regression():
    one = Result(spec=_result(1.0).spec, status="ok", measurement=Measurement((1.0,) * 10), id=4)
    (change,) = compare_runs([one], [replace(one, measurement=Measurement((2.0,) * 10))], 0.05)
    assert not change.regression and change.verdict == "undetermined"
    assert change.speedup.no_interval.startswith("#4 ran in 1 process")


def test_cli_regression_gate_exit_codes(tmp_path):
    db = tmp_path / "r.db"
    with Store(db) as store:
        store.save(_result(1.0, sweep="before"))
        store.save(_result(1.3, sweep="slower"))
        store.save(_result(1.0, sweep="same"))
    slower = run_cli("compare", "--baseline", "before", "--candidate", "slower", "--db", str(db))
    assert slower.returncode == 1 and "REGRESSION" in slower.stdout
    same = run_cli(
        "compare",
        "--baseline",
        "before",
        "--candidate",
        "same",
        "--threshold",
        "5%",
        "--json",
        "--db",
        str(db),
    )
    assert same.returncode == 0 and json.loads(same.stdout)[0]["regression"] is False
    loose = run_cli(
        "compare",
        "--baseline",
        "before",
        "--candidate",
        "slower",
        "--threshold",
        "50%",
        "--db",
        str(db),
    )
    assert loose.returncode == 0
    missing = run_cli("compare", "--baseline", "before", "--candidate", "nope", "--db", str(db))
    assert missing.returncode == 2 and "no stored result or sweep 'nope'" in missing.stderr
    half = run_cli("compare", "--baseline", "before", "--db", str(db))
    assert half.returncode == 2 and "--baseline needs --candidate" in half.stderr
    with Store(db) as store:
        store.save(
            Result(
                spec=_result(1.0).spec, status="oom", error="CUDA out of memory", sweep="crashed"
            )
        )
    crashed = run_cli("compare", "--baseline", "before", "--candidate", "crashed", "--db", str(db))
    assert crashed.returncode == 1 and "REGRESSION" in crashed.stdout
    bad = run_cli("compare", "--threshold", "lots", "--db", str(db))
    assert bad.returncode == 2 and "is not a percentage" in bad.stderr


def test_a_gate_that_compared_nothing_has_not_passed(tmp_path):
    db = tmp_path / "r.db"
    with Store(db) as store:
        store.save(_result(1.0, sweep="before"))
        store.save(_result(1.0, precision="bf16", sweep="other"))
    out = run_cli("compare", "--baseline", "before", "--candidate", "other", "--db", str(db))
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.strip().endswith("the regression check compared nothing")
    assert len(out.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("word", "message"),
    [
        ("5", "a bare 5 is 500%; write 5% for 5 percent, or 0.05"),
        ("1.5", "a bare 1.5 is 150%; write 1.5% for 1.5 percent, or 0.015"),
        ("150%", "must be between 0% and 100%, got 150%"),
    ],
)
def test_a_bare_threshold_above_1_says_which_was_meant(word, message, tmp_path):
    out = run_cli("compare", "--threshold", word, "--db", str(tmp_path / "r.db"))
    assert out.returncode == 2 and message in out.stderr


@pytest.mark.parametrize("word", ["5%", "0.05"])
def test_a_threshold_reads_as_a_percentage_or_a_fraction(word):
    from accelbench.cli.options import fraction

    assert fraction(word) == pytest.approx(0.05)


def test_cli_compare_with_no_matches_prints_an_empty_table_with_a_note(tmp_path):
    db = tmp_path / "r.db"
    with Store(db) as store:
        store.save(_result(1.0))
    out = run_cli("compare", "--workload", "vgg16", "--db", str(db))
    assert out.returncode == 0 and "no results match" in out.stdout


def test_a_speedup_without_an_interval_says_why_and_stays_valid_json():
    """One process bounds nothing between processes: no [0.00–inf], and no Infinity in JSON."""
    import json

    one = Result(
        spec=RunSpec("seed-cnn", "cpu", 64, 20), status="ok", measurement=Measurement((0.5,))
    )
    s = speedup(one, _result(1.0, noise=0.0))
    assert s.text() == (
        "2.00x (no interval: the candidate ran in 1 process: too few to bound the spread "
        "between processes (needs 2 on each side))"
    )
    assert not s.significant
    record = json.loads(json.dumps(s.to_dict(), allow_nan=False))
    assert record["ci95_low"] is None and record["ci95_high"] is None


# --- issue 27 item 9: a machine with one device, whole names, too few samples ---------------

CNN = "/tmp/newcomer/mymodels/cnn.py:make_cnn"
VIT = "/tmp/newcomer/mymodels/vit.py:make_vit"


def _named(workload, seconds, precision="fp32", processes=3, per=10, sweep="s1", device="cpu"):
    samples = tuple(seconds * (1 + 0.02 * RNG.standard_normal(processes * per)))
    return Result(
        spec=RunSpec(workload, device, 64, 20, precision=precision),
        status="ok",
        measurement=Measurement(samples, (), 1, ((per, 0),) * processes),
        environment={"host": "laptop", "machine": "laptop"},
        sweep=sweep,
        metrics=Rounds(passes=tuple(range(1, processes + 1)), planned=processes).to_metrics(),
    )


def _one_device_db(path):
    with Store(path) as store:
        for r in (
            _named(CNN, 1.0),
            _named(CNN, 0.5, "bf16"),
            _named(VIT, 2.0),
            _named(VIT, 1.1, "bf16", processes=1, per=2, sweep="s2"),  # 2 samples, 1 process
        ):
            store.save(r)
    return path


def test_compare_on_one_device_puts_each_configuration_against_the_fastest(tmp_path):
    db = str(_one_device_db(tmp_path / "r.db"))
    out = run_cli("compare", "--db", db)
    assert out.returncode == 0, out.stderr
    title = out.stdout.splitlines()[0]
    assert title.startswith("compared by configuration: no configuration here ran on two")
    assert "against the fastest of its workload and mode on its device" in title
    assert "vs fastest [95% CI]" in out.stdout and "baseline" not in out.stdout
    rows = [line for line in out.stdout.splitlines() if line.startswith("│ …/")]
    # the two workloads read apart, and their whole names are given once
    assert sum("│ …/cnn.py:make_cnn │" in row for row in rows) == 2
    assert sum("│ …/vit.py:make_vit │" in row for row in rows) == 2
    assert f"…/cnn.py:make_cnn is {CNN}" in out.stdout
    assert f"…/vit.py:make_vit is {VIT}" in out.stdout
    cnn = [row for row in rows if "make_cnn" in row]
    assert "bf16" in cnn[0] and "fastest" in cnn[0]  # the fastest first
    assert "0.50x [" in cnn[1] or "0.49x [" in cnn[1] or "0.51x [" in cnn[1]

    found = json.loads(run_cli("compare", "--json", "--db", db).stdout)
    assert {row["by"] for row in found} == {"configuration"}
    versus = {(row["result"]["spec"]["workload"], row["value"]): row for row in found}
    assert versus[(CNN, "train fp32 b64")]["speedup"]["significant"] is True
    # 2 timed samples in 1 process against 3 processes: a ratio, never significant
    few = versus[(VIT, "train fp32 b64")]["speedup"]
    assert few["ratio"] == pytest.approx(0.55, rel=0.05)
    assert few["significant"] is False and few["ci95_low"] is None
    assert "ran in 1 process: too few" in few["no_interval"]
    assert (
        versus[(VIT, "train bf16 b64")]["baseline_id"]
        == versus[(VIT, "train bf16 b64")]["result"]["id"]
    )


def test_compare_defaults_to_devices_where_a_configuration_ran_on_two(tmp_path):
    db = tmp_path / "r.db"
    with Store(db) as store:
        store.save(_named(CNN, 1.0))
        store.save(_named(CNN, 0.1, device="cuda:0"))
    out = run_cli("compare", "--db", str(db))
    assert out.stdout.splitlines()[0] == "compared by device"
    assert "vs cpu [95% CI]" in out.stdout and "baseline" in out.stdout


def test_two_samples_a_side_are_never_significant_whatever_the_ratio():
    def few(seconds):
        return _named("seed-cnn", seconds, processes=2, per=1)  # 2 processes, 2 samples

    s = speedup(few(0.56), few(1.0))
    assert s.ratio == pytest.approx(1 / 0.56, rel=0.1)
    assert not s.significant and "2 timed samples: too few (needs 6)" in s.no_interval


def test_any_dimension_can_take_the_fastest_as_its_baseline():
    results = [_named("seed-cnn", 1.0), _named("seed-cnn", 0.5, "bf16")]
    comparison = compare(results, find_dimension("precision"), "fastest")
    assert [row.value for row in comparison.rows] == ["bf16", "fp32"]  # fastest first
    assert comparison.rows[0].speedup is None and comparison.rows[1].speedup.ratio < 0.6


def test_short_names_are_unique_suffixes_and_leave_plain_names_whole():
    from accelbench.render.text import short_names

    names = short_names(
        [CNN, VIT, "/a/x/m.py:make", "/b/x/m.py:make", "seed-cnn", "m.py:f", "/c/m.py:f"]
    )
    assert names[CNN] == "…/cnn.py:make_cnn" and names[VIT] == "…/vit.py:make_vit"
    assert names["/a/x/m.py:make"] == "…/a/x/m.py:make"  # x/m.py:make is not enough
    assert names["seed-cnn"] == "seed-cnn" and names["m.py:f"] == "m.py:f"
    assert names["/c/m.py:f"] == "…/c/m.py:f"  # m.py:f alone is the other's name
    assert len(set(names.values())) == len(names)


def test_a_long_name_in_a_narrow_table_folds_and_is_never_cut():
    from accelbench.render.console import compare_table

    results = [_named(CNN.replace("/", "_"), 1.0), _named(VIT.replace("/", "_"), 0.5)]
    table = compare_table(compare(results, find_dimension("workload")), width=60)
    assert "…" not in table
    flat = "".join(line.split("│")[1].strip() for line in table.splitlines() if "│" in line)
    assert CNN.replace("/", "_") in flat and VIT.replace("/", "_") in flat


def _partial(seconds, sweep="s1"):
    """Two of three planned processes: a sweep killed (kill -9) before its third pass."""
    full = _result(seconds, sweep=sweep)
    m = full.measurement
    return replace(
        full,
        measurement=Measurement(m.samples[:20], (), 1, ((10, 0),) * 2),
        metrics=Rounds(passes=(1, 2), planned=3, complete=False).to_metrics(),
    )


def test_a_partial_side_has_no_interval_unless_asked_for():
    kept = speedup(_partial(0.5), _result(1.0))
    assert kept.no_interval.startswith("the candidate is partial, 2 of 3 planned processes")
    assert not kept.significant and "no interval" in kept.text()
    asked = speedup(_partial(0.5), _result(1.0), include_partial=True)
    assert asked.significant and asked.method.startswith("paired: 2 processes")
    (change,) = compare_runs([_result(1.0)], [_partial(2.0)], 0.05)
    assert change.verdict == "undetermined" and not change.regression
    (change,) = compare_runs([_result(1.0)], [_partial(2.0)], 0.05, include_partial=True)
    assert change.regression


def test_every_output_marks_a_partial_row(tmp_path):
    db = tmp_path / "r.db"
    with Store(db) as store:
        store.save(_result(1.0))
        half = _partial(0.5)
        store.save(replace(half, spec=replace(half.spec, precision="bf16")))
    shown = run_cli("results", "--db", str(db)).stdout
    assert "(partial 2/3)" in shown and shown.count("partial") == 1
    listed = json.loads(run_cli("results", "--json", "--db", str(db)).stdout)
    marked = [(r["partial"], r.get("planned_processes")) for r in listed]
    assert marked == [(True, 3), (False, None)]
    csv_file = tmp_path / "r.csv"
    run_cli("results", "export", "--out", str(csv_file), "--db", str(db))
    rows = list(csv.DictReader(io.StringIO(csv_file.read_text())))
    marked = [(row["partial"], row["planned_processes"]) for row in rows]
    assert marked == [("False", "3"), ("True", "3")]  # oldest first, as an export is
    report = run_cli("report", "--format", "markdown", "--db", str(db)).stdout
    assert "(partial 2/3)" in report
    page = tmp_path / "r.html"
    assert run_cli("report", "--out", str(page), "--db", str(db)).returncode == 0
    assert "(partial 2/3)" in page.read_text()
    compared = run_cli("compare", "--by", "precision", "--db", str(db))
    assert "is partial, 2 of 3 planned processes" in compared.stdout, compared.stdout
    included = run_cli("compare", "--by", "precision", "--include-partial", "--db", str(db))
    assert "is partial" not in included.stdout and "[" in included.stdout
