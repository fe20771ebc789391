"""`compare --candidate RUN` alone: the regression gate against the configuration's history on
its machine, driven through the real CLI; its exit statuses (0, 1, 3, 2)."""

import json
from dataclasses import replace

import numpy as np

from accelbench.store.db import Store
from tests.analysis.test_history import _run
from tests.conftest import run_cli


def _store(path, run_seconds, candidate_seconds, rng):
    """Earlier runs of one command (one sweep), then a candidate of its own sweep."""
    with Store(path) as store:
        for i, seconds in enumerate(run_seconds):
            store.save(_run(seconds, i, rng))
        cand = _run(candidate_seconds, 100, rng)
        store.save(replace(cand, sweep="candidate", id=None))
    return str(path)


def test_the_history_gate_exit_statuses(tmp_path):
    rng = np.random.default_rng(21)
    stable = [0.1 * (1 + 0.01 * x) for x in rng.standard_normal(8)]
    slower = _store(tmp_path / "slow.db", stable, 0.11, rng)
    out = run_cli("compare", "--candidate", "candidate", "--db", slower)
    assert out.returncode == 1, out.stderr
    assert "REGRESSION (1)" in out.stdout and "slower, below the history's interval" in out.stdout
    assert "earlier runs" in out.stdout and "box" in out.stdout.splitlines()[0]

    same = _store(tmp_path / "same.db", stable, 0.1, rng)
    ok = run_cli("compare", "--candidate", "candidate", "--json", "--db", same)
    assert ok.returncode == 0, ok.stderr
    (found,) = json.loads(ok.stdout)
    assert found["verdict"] == "ok" and found["history"]["earlier_runs"] == 8
    assert found["history"]["prediction"]["detectable_slowdown"] < 0.05

    short = _store(tmp_path / "short.db", stable[:3], 0.2, rng)
    few = run_cli("compare", "--candidate", "candidate", "--db", short)
    assert few.returncode == 3 and "3 earlier runs, needs 5" in few.stdout

    windowed = run_cli("compare", "--candidate", "candidate", "--window", "3", "--db", same)
    assert windowed.returncode == 2 and "--window: must be 5 or more" in windowed.stderr


def test_a_noisy_history_is_undetermined_with_the_detectable_change(tmp_path):
    rng = np.random.default_rng(22)
    noisy = [0.1 * float(np.exp(0.15 * x)) for x in rng.standard_normal(8)]
    db = _store(tmp_path / "noisy.db", noisy, 0.1, rng)
    out = run_cli("compare", "--candidate", "candidate", "--db", db)
    text = " ".join(out.stdout.split())
    assert out.returncode == 3, out.stderr
    assert "detects only a slowdown of" in text and "not 5%" in text
    assert "quieter machine" in text


def test_a_candidate_not_stored_is_one_line_exit_2(tmp_path):
    rng = np.random.default_rng(23)
    db = _store(tmp_path / "r.db", [0.1] * 5, 0.1, rng)
    out = run_cli("compare", "--candidate", "nope", "--db", db)
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1
    assert "no stored result or sweep 'nope'" in out.stderr


def test_runs_after_the_candidate_are_not_its_history(tmp_path):
    rng = np.random.default_rng(24)
    with Store(tmp_path / "r.db") as store:
        first = _run(0.1, 0, rng)
        store.save(replace(first, sweep="first", id=None))
        for i in range(6):
            store.save(_run(0.1, 10 + i, rng))
    out = run_cli("compare", "--candidate", "first", "--json", "--db", str(tmp_path / "r.db"))
    assert out.returncode == 3 and json.loads(out.stdout)[0]["history"]["earlier_runs"] == 0


def test_results_lists_where_each_run_landed_against_its_earlier_runs(tmp_path):
    rng = np.random.default_rng(25)
    stable = [0.1 * (1 + 0.01 * x) for x in rng.standard_normal(6)]
    db = _store(tmp_path / "r.db", stable, 0.13, rng)  # the candidate: 23% slower
    out = run_cli("results", "--db", db)
    assert out.returncode == 0, out.stderr
    rows = [line for line in out.stdout.splitlines() if line.startswith("│ ")]
    assert "OUTSIDE [" in rows[0]  # the newest: the slow candidate
    assert "inside [" in rows[1]  # 5 earlier runs: a prediction
    assert "4 earlier, needs 5" in rows[2] and "│ —  " in rows[-1]  # the first: none before
    listed = json.loads(run_cli("results", "--json", "--db", db).stdout)
    newest, oldest = listed[0]["history"], listed[-1]["history"]
    assert newest["earlier_runs"] == 6 and newest["inside"] is False
    assert newest["prediction"]["low"] < newest["prediction"]["center"]
    assert oldest is None  # nothing before the first run
    assert listed[-2]["history"] == {
        "earlier_runs": 1, "needs": 5, "prediction": None, "inside": None,
    }  # fmt: skip


def test_the_gates_exit_status_puts_a_regression_before_undetermined():
    from accelbench.cli.compare import exit_status

    assert exit_status(["ok", "faster"]) == 0
    assert exit_status(["ok", "undetermined"]) == 3
    assert exit_status(["undetermined", "REGRESSION", "ok"]) == 1


def test_the_planted_slowdown_runs_every_tenth_step_twice_and_only_when_planted():
    """benchmarks/planted_slowdown.py, loaded in a process of its own (it registers a lever):
    planted by the environment, it keeps the configuration's identity (never active by value)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    code = (
        "import runpy, types\n"
        "from accelbench.core.result import RunSpec\n"
        "lever = runpy.run_path('benchmarks/planted_slowdown.py')['PlantedSlowdown']()\n"
        "calls = []\n"
        "prep = types.SimpleNamespace(step=lambda: calls.append(1))\n"
        "lever.apply_step(prep, '')\n"
        "for _ in range(30): prep.step()\n"
        "print(len(calls), lever.active(None), lever.label(lever.parse('off')) == '')\n"
    )

    def run(planted: str) -> list[str]:
        env = {**os.environ, "ACCELBENCH_PLANTED_SLOWDOWN": planted}
        out = subprocess.run(
            [sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True,
            timeout=60,
        )
        assert out.returncode == 0, out.stderr
        return out.stdout.split()

    assert run("0.1") == ["33", "True", "True"]  # 30 steps and 3 more: 10% more work
    assert run("")[1:] == ["False", "True"]  # not planted: not applied at all
