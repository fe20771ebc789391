"""Processes per configuration through the real CLI and the library: the options, their bad
input, each run of one command a run of its own, and --resume at the process reached."""

from __future__ import annotations

import json

import pytest

from accelbench.analysis.facts import Rounds
from accelbench.store.db import Store
from accelbench.workflows import benchmark as workflow
from accelbench.workflows.benchmark import BenchmarkRequest, plan, run_plan
from accelbench.workloads import WorkloadRef
from tests.conftest import copy_of, digest, run_cli

FAST = ["mlp", "--devices", "cpu", "--no-verdict", "--no-latency", "--quiet"]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--rounds", "0"], "argument --rounds: must be 1 or more, got 0"),
        (["--max-rounds", "1"], "--max-rounds 1 is below the 2 an interval needs"),
        (["--rounds", "3", "--max-rounds", "5"], "give one of them"),
        (["--rounds", "5", "--blocks", "3"], "--rounds 5 cannot share 3 timed its"),
    ],
)
def test_bad_process_counts_are_one_line_exit_2_and_nothing_stored_changes(
    options, message, tmp_path, measured_db
):
    db = copy_of(measured_db, tmp_path)  # one result of mlp, measured by `run`
    before = digest(db)
    out = run_cli("run", *FAST, *options, "--db", str(db))
    assert out.returncode == 2 and message in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and out.stdout == ""
    assert digest(db) == before


def test_a_command_run_again_is_a_run_of_its_own_and_compare_shows_both(tmp_path):
    """Issue 37 item 2: run, change something, run again, compare: the same command twice is
    two runs (two sweep ids of one key), and compare, the report and the gate see both."""
    db = tmp_path / "r.db"
    sweeps = []
    for _ in range(2):
        out = run_cli("run", *FAST, "--blocks", "2", "--json", "--db", str(db))
        assert out.returncode == 0, out.stderr
        sweeps.append(json.loads(out.stdout)["sweep"])
    with Store(db, create=False) as store:
        newer, older = store.results()
    assert [older.sweep, newer.sweep] == sweeps and older.sweep != newer.sweep
    assert older.sweep.split("-")[0] == newer.sweep.split("-")[0]  # the options' key
    assert older.facts.get(Rounds).passes == newer.facts.get(Rounds).passes == (1, 2)
    resumed = run_cli("run", *FAST, "--blocks", "2", "--json", "--db", str(db), "--resume")
    assert json.loads(resumed.stdout) == {"db": str(db), "sweep": sweeps[1], "results": []}
    shown = json.loads(run_cli("compare", "--json", "--db", str(db)).stdout)
    assert [(row["by"], row["value"], row["baseline_id"]) for row in shown] == [
        ("run", older.sweep, older.id),
        ("run", newer.sweep, older.id),
    ]
    report = run_cli("report", "--format", "markdown", "--db", str(db)).stdout
    assert f"| #{older.id} |" in report and f"| #{newer.id} |" in report
    gate = run_cli("compare", "--baseline", older.sweep, "--candidate", newer.sweep,
                   "--json", "--db", str(db))  # fmt: skip
    (change,) = json.loads(gate.stdout)
    # two runs at different times: unpaired, and with 2 timed samples a side, no interval
    assert change["verdict"] == "undetermined" and "too few (needs 6)" in (
        change["speedup"]["no_interval"]
    )


@pytest.mark.parametrize("same", ["sweep", "id"])
def test_a_run_compared_with_itself_is_refused_in_one_line(same, tmp_path, measured_db):
    db = copy_of(measured_db, tmp_path)
    with Store(db, create=False) as store:
        (stored,) = store.results()
    candidate = stored.sweep if same == "sweep" else str(stored.id)
    out = run_cli("compare", "--baseline", stored.sweep, "--candidate", candidate,
                  "--db", str(db))  # fmt: skip
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.strip().splitlines() == [
        f"accelbench: error: --baseline {stored.sweep} and --candidate {candidate} hold the "
        f"same result(s) #{stored.id}: a run compared with itself is 1.00x by construction; "
        "give two different runs (sweep or result ids: see `accelbench results`)"
    ]


def test_resume_goes_on_at_the_process_each_configuration_reached(tmp_path, monkeypatch):
    request = BenchmarkRequest(
        workloads=(WorkloadRef("mlp"),), devices="cpu", modes=("train", "infer"), epochs=2,
        rounds=2, verdict=False, latency=False,
    )  # fmt: skip
    checked = plan(request)
    real = workflow._next_process
    calls = []

    def interrupted(plan_, progress, pass_no, on_block):
        calls.append((progress.config.spec.mode, pass_no))
        if len(calls) == 3:  # Ctrl-C while the first configuration's second process runs
            raise KeyboardInterrupt
        return real(plan_, progress, pass_no, on_block)

    monkeypatch.setattr(workflow, "_next_process", interrupted)
    with Store(tmp_path / "r.db") as store, pytest.raises(KeyboardInterrupt):
        run_plan(checked, store, quiet=True)
    with Store(tmp_path / "r.db") as store:
        kept = {r.spec.mode: r for r in store.results()}
    assert {mode: r.measurement.processes for mode, r in kept.items()} == {"train": 1, "infer": 1}
    assert not any(r.facts.get(Rounds).complete for r in kept.values())
    monkeypatch.setattr(workflow, "_next_process", real)
    with Store(tmp_path / "r.db") as store:
        resumed = run_plan(checked, store, resume=True, quiet=True)
        final = {r.spec.mode: r for r in store.results()}
    assert len(final) == 2 and {r.uid for r in resumed} == {r.uid for r in kept.values()}
    for mode, result in final.items():
        assert result.measurement.processes == 2 and result.facts.get(Rounds).complete
        assert result.facts.get(Rounds).passes == (1, 2) and result.id == kept[mode].id
    with Store(tmp_path / "r.db") as store:  # complete: a third resume measures nothing
        assert run_plan(checked, store, resume=True, quiet=True) == []
