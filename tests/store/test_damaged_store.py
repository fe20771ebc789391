"""A damaged or interrupted store (store/db): a damaged row is named in one line and left out,
every other row still listed, compared and reported; a hot journal a killed writer left does
not stop the commands that only read, and they still write nothing."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys

import pytest

from accelbench.store.db import Store
from tests.conftest import built_once, digest, run_cli

FAST = ["--devices", "cpu", "--blocks", "2", "--rounds", "2", "--no-verdict", "--no-latency"]
FAST += ["--batch-sizes", "8", "--quiet"]  # the rows are under test, not seed-cnn's speed


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    """Four measured results: mlp and seed-cnn, training and inference, on the CPU (once for
    all workers: the tests copy it before they damage it)."""

    def build(folder):
        db = folder / "r.db"
        out = run_cli("run", "mlp", "seed-cnn", *FAST, "--modes", "train,infer", "--db", str(db))
        assert out.returncode == 0, out.stderr

    return built_once(tmp_path_factory, "damaged-store", build) / "r.db"


@pytest.mark.parametrize(
    ("column", "value", "said"),
    [
        ("metrics", "{not json", "its metrics is not JSON: '{not json'"),
        ("environment", "", "its environment is not JSON: ''"),
        ("batch_size", "lots", "spec 'batch_size' has the wrong type (str)"),
        ("samples", "[-1.0, 0.5]", "samples must be positive, finite numbers of seconds"),
        (
            "precision",
            "fp8",
            "spec: unknown precision 'fp8'; valid: fp32, tf32, fp16, bf16, int8",
        ),
    ],
)
def test_a_damaged_row_is_named_and_left_out(stored, tmp_path, column, value, said):
    db = tmp_path / "r.db"
    db.write_bytes(stored.read_bytes())
    with sqlite3.connect(db) as conn:
        conn.execute(f"UPDATE results SET {column} = ? WHERE id = 2", (value,))
    before = digest(db)
    for command in (["results", "--json"], ["compare", "--json"], ["report", "--format",
                                                                   "markdown"]):  # fmt: skip
        out = run_cli(*command, "--db", str(db))
        assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
        (line,) = out.stderr.strip().splitlines()
        assert line == f"accelbench: warning: result #2 is damaged ({said}): left out"
    listed = json.loads(run_cli("results", "--json", "--db", str(db)).stdout)
    assert sorted(r["id"] for r in listed) == [1, 3, 4]
    assert digest(db) == before  # reading never writes


def _kill_a_writer_mid_transaction(db) -> None:
    """A writer that changed pages of the database file itself, then died uncommitted."""
    code = (
        "import os, sqlite3\n"
        f"c = sqlite3.connect({str(db)!r}, isolation_level=None)\n"
        "c.execute('PRAGMA cache_size=1')\n"  # spill changed pages to the file before commit
        "c.execute('BEGIN IMMEDIATE')\n"
        "for _ in range(500):\n"
        "    c.execute(\"UPDATE results SET error = ?\", ('x' * 2000,))\n"
        "os._exit(0)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_hot_journal_does_not_stop_the_commands_that_only_read(stored, tmp_path):
    db = tmp_path / "r.db"
    db.write_bytes(stored.read_bytes())
    _kill_a_writer_mid_transaction(db)
    journal = db.with_name(db.name + "-journal")
    assert journal.is_file() and journal.stat().st_size > 0
    before = (digest(db), digest(journal))
    for command in (["results"], ["compare"], ["report", "--format", "markdown"]):
        out = run_cli(*command, "--db", str(db))
        assert out.returncode == 0 and out.stderr == "", out.stderr
    listed = json.loads(run_cli("results", "--json", "--db", str(db)).stdout)
    assert len(listed) == 4 and all(r["error"] == "" for r in listed)  # as committed
    assert (digest(db), digest(journal)) == before
    with Store(db) as store:  # a writer rolls it back, as SQLite always did
        assert len(store.results()) == 4
    assert not journal.exists() or os.path.getsize(journal) == 0
