"""Racing sweeps (store/db claims): two `run --resume` of one sweep into one database at once
split its configurations and store none twice; a claim a killed run left is taken over; one a
live run on another host holds is left to it."""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import subprocess
import sys
import time

import pytest

from accelbench.analysis.facts import Rounds
from accelbench.core.result import RunSpec
from accelbench.store.db import Store
from tests.conftest import built_once, run_cli

SWEEP = ["mlp", "--devices", "cpu", "--modes", "train,infer", "--precisions", "fp32,bf16",
         "--blocks", "2", "--rounds", "2", "--no-verdict", "--no-latency", "--quiet"]  # fmt: skip


def _sweep_id(db) -> str:
    with Store(db, create=False) as store:
        (sweep,) = {r.sweep for r in store.results()}
    return sweep


@pytest.fixture(scope="module")
def raced(tmp_path_factory):
    """Two `run --resume` of SWEEP started at once into one new database: their exit codes,
    what they said, and the database (whose sweep id the claim test below reads); raced once
    for all xdist workers."""

    def build(folder):
        env = {k: v for k, v in os.environ.items() if k != "ACCELBENCH_DB"}
        command = [sys.executable, "-m", "accelbench", "run", *SWEEP, "--resume", "--db",
                   str(folder / "r.db")]  # fmt: skip
        racers = [subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True)
                  for _ in range(2)]  # fmt: skip
        said = [racer.communicate(timeout=600)[1] for racer in racers]
        codes = [racer.returncode for racer in racers]
        (folder / "raced.json").write_text(json.dumps({"codes": codes, "said": said}))

    folder = built_once(tmp_path_factory, "raced", build)
    raced = json.loads((folder / "raced.json").read_text())
    return raced["codes"], raced["said"], str(folder / "r.db")


def test_two_resumers_at_once_store_each_configuration_once(raced):
    codes, said, db = raced
    assert codes == [0, 0], said
    with Store(db, create=False) as store:
        results = store.results()
    assert len(results) == 4 and len({r.spec for r in results}) == 4  # none twice
    assert all(r.measurement.processes == 2 and r.facts.get(Rounds).complete for r in results)
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT count(*) FROM claims").fetchone() == (0,)  # all released


def _claim(db, sweep: str, owner: str, heartbeat: float) -> None:
    spec = RunSpec("mlp", "cpu", 100, 1, mode="infer")
    with sqlite3.connect(db) as conn:
        conn.execute(
            "INSERT INTO claims VALUES (?, ?, ?, ?)",
            (sweep, json.dumps(spec.to_dict(), sort_keys=True), owner, heartbeat),
        )


def test_a_dead_runs_claim_is_taken_over_and_a_live_one_elsewhere_is_left(tmp_path, raced):
    sweep_id = _sweep_id(raced[2])  # SWEEP's, as `run` stored it: the resumers below go on
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True).stdout.strip()  # fmt: skip
    dead, alive = tmp_path / "dead.db", tmp_path / "alive.db"
    for db in (dead, alive):
        Store(db).close()  # a new database, its schema made
    _claim(dead, sweep_id, f"{socket.gethostname()} {gone} 1", time.time())
    out = run_cli("run", *SWEEP, "--resume", "--db", str(dead), "--json")
    assert out.returncode == 0, out.stderr
    measured = {(r["spec"]["mode"], r["spec"]["precision"]) for r in
                json.loads(out.stdout)["results"]}  # fmt: skip
    assert ("infer", "fp32") in measured and len(measured) == 4  # the dead run's taken over
    _claim(alive, sweep_id, "another-host 4242 7", time.time())  # fresh: its holder is at it
    left = run_cli("run", *SWEEP, "--resume", "--db", str(alive), "--json")
    assert left.returncode == 0, left.stderr
    assert "is being measured by another run (pid 4242 on another-host): left to it" in (
        left.stderr
    )
    measured = {(r["spec"]["mode"], r["spec"]["precision"]) for r in
                json.loads(left.stdout)["results"]}  # fmt: skip
    assert ("infer", "fp32") not in measured and len(measured) == 3
