"""The command line on a PostgreSQL store (a real server: tests/store/conftest.py): `run`,
`results`, `compare`, `report` and `results import` as on a file; a read-only role; the password
never printed nor stored; bad URLs, wrong passwords and missing packages in one line; a server
restarting mid-run loses nothing."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from accelbench.store.db import Store
from tests.conftest import run_cli
from tests.store.conftest import READER_PASSWORD, WRITER_PASSWORD, Cluster
from tests.store.test_store import make_result

RUN = ["run", "mlp", "--devices", "cpu", "--blocks", "2", "--rounds", "2",
       "--no-verdict", "--no-latency", "--quiet"]  # fmt: skip


def _one_line(out: subprocess.CompletedProcess[str], *secrets: str) -> str:
    """The single error line of a refused command, checked to carry no secret."""
    assert out.returncode == 2, (out.stdout, out.stderr)
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in out.stderr, out.stderr
    for secret in secrets:
        assert secret not in out.stderr + out.stdout
    return lines[0]


@pytest.fixture(scope="module")
def team(pg_cluster: Cluster) -> dict[str, str]:
    """A database a writer ran one small sweep into (two precisions), through ACCELBENCH_DB
    with the password in it, and the URLs of its writer and reader."""
    db = pg_cluster.database("writer")
    writer = pg_cluster.url(db, "writer", WRITER_PASSWORD)
    out = run_cli(*RUN, "--precisions", "fp32,bf16", "--json", env={"ACCELBENCH_DB": writer})
    assert out.returncode == 0, out.stderr
    return {"db": db, "writer": writer, "reader": pg_cluster.url(db, "reader", READER_PASSWORD),
            "run": out.stdout, "said": out.stderr}  # fmt: skip


def test_run_stores_on_the_server_and_never_shows_nor_stores_the_password(pg_cluster, team):
    ran = json.loads(team["run"])
    assert ran["db"] == f"postgresql://writer:***@127.0.0.1:{pg_cluster.port}/{team['db']}"
    assert len(ran["results"]) == 2
    encoded = team["writer"].split(":")[2].split("@")[0]
    for secret in (WRITER_PASSWORD, encoded):
        assert secret not in team["run"] + team["said"]
        for table in ("results", "calibrations", "claims"):
            rows = pg_cluster.sql(f"SELECT t::text FROM {table} t", db=team["db"])
            assert not any(secret in str(row[0]) for row in rows), table


def test_a_reader_lists_compares_and_reports_but_may_not_run(team):
    listed = run_cli("results", "--json", "--db", team["reader"])
    assert listed.returncode == 0, listed.stderr
    assert sorted(r["spec"]["precision"] for r in json.loads(listed.stdout)) == ["bf16", "fp32"]
    for command in (["compare"], ["report", "--format", "markdown"], ["results"]):
        out = run_cli(*command, "--db", team["reader"])
        assert out.returncode == 0 and READER_PASSWORD not in out.stdout + out.stderr, out.stderr
    refused = run_cli(*RUN, "--db", team["reader"])
    line = _one_line(refused, READER_PASSWORD)
    assert "role 'reader' may only read it" in line and "reader:***@" in line


def test_reading_a_server_store_imports_no_torch(team):
    code = ("import sys; from accelbench.cli.main import main; code = main(['results', '--db', "
            f"{team['reader']!r}]); print('torch' in sys.modules, code)")  # fmt: skip
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip().splitlines()[-1] == "False 0", out.stderr


def test_importing_an_sqlite_store_twice_adds_it_once_with_its_uids(pg_cluster, tmp_path):
    old = tmp_path / "old.db"
    with Store(old) as store:
        uids = {store.save(make_result()).uid for _ in range(3)}
    url = pg_cluster.url(pg_cluster.database())
    first = run_cli("results", "import", str(old), "--db", url)
    assert first.stdout.strip() == f"{old}: 3 result(s), 3 new, 0 already stored", first.stderr
    again = run_cli("results", "import", str(old), "--db", url)
    assert again.stdout.strip() == f"{old}: 3 result(s), 0 new, 3 already stored", again.stderr
    with Store(url, create=False) as store:
        assert {r.uid for r in store.results()} == uids


def test_bad_server_locations_are_one_line_each(pg_cluster):
    db = pg_cluster.database("writer")
    good = pg_cluster.url(db, "writer", WRITER_PASSWORD)
    Store(good).close()
    newer = pg_cluster.url(pg_cluster.database())
    Store(newer).close()
    pg_cluster.sql("UPDATE accelbench_schema SET version = 99", db=newer.rsplit("/", 1)[1])
    cases = {
        good.replace("127.0.0.1", "[::1"): "is not a valid PostgreSQL URL",
        good.replace(f":{pg_cluster.port}/", ":1/"): "Connection refused",
        pg_cluster.url(db, "writer", "not-the-password"): "password authentication failed",
        good.replace(f"/{db}", "/nosuchdb"): 'database "nosuchdb" does not exist',
        newer: "newer accelbench (schema 99",
    }
    for url, expected in cases.items():
        for command in (["results"], ["compare"]):
            line = _one_line(run_cli(*command, "--db", url), WRITER_PASSWORD, "not-the-password")
            assert expected in line and ("writer:***@" in line or url == newer), line


def test_without_psycopg_a_server_store_says_how_to_install_it():
    code = ("import sys; sys.modules['psycopg'] = None; from accelbench.cli.main import main; "
            "sys.exit(main(['results', '--db', 'postgresql://u:pw@127.0.0.1:1/x']))")  # fmt: skip
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    line = _one_line(out, ":pw@")
    wanted = "psycopg is needed for a PostgreSQL results store: pip install 'accelbench[postgres]'"
    assert wanted in line


def test_a_server_restarting_mid_run_loses_nothing(pg_cluster, tmp_path):
    db = pg_cluster.database()
    url = pg_cluster.url(db)
    with Store(url):  # the schema, so that the trigger below has its table
        pass
    with _writes_after_the_first_held(pg_cluster, db):
        run = _start_run(url, tmp_path)
        _wait_for_a_held_write(pg_cluster, db)
        pg_cluster.stop()  # as a crash, with a save under way: the run's connection is cut
    pg_cluster.start()
    out, err = run.communicate(timeout=600)
    assert run.returncode == 0, err
    kept = list(tmp_path.glob("accelbench-unsaved-*.json"))
    stored = {r["uid"] for r in json.loads(out)["results"]}
    assert len(stored) == 2
    with Store(url, create=False) as store:
        on_server = {r.uid for r in store.results()}
    assert on_server == stored and not kept, err  # the restart was retried, not worked around


def test_a_server_away_for_the_rest_of_a_run_keeps_its_results_in_a_file(pg_cluster, tmp_path):
    db = pg_cluster.database("writer")
    url = pg_cluster.url(db, "writer", WRITER_PASSWORD)
    with Store(url):  # the schema, so that the trigger below has its table
        pass
    with _writes_after_the_first_held(pg_cluster, db):
        run = _start_run(url, tmp_path)
        _wait_for_a_held_write(pg_cluster, db)
        pg_cluster.stop()  # with a save under way: the server goes, whatever the host's load
    try:
        out, err = run.communicate(timeout=600)
    finally:
        pg_cluster.start()
    assert run.returncode == 0, err
    (kept,) = tmp_path.glob("accelbench-unsaved-*.json")
    told = [line for line in err.splitlines() if "kept in" in line]
    assert told and f"accelbench results import {kept.name} --db postgresql://writer:***@" in (
        told[-1]
    )
    assert WRITER_PASSWORD not in out + err
    ran = json.loads(out)["results"]
    assert len(ran) == 2 and any(r["id"] is None for r in ran)  # one at least not on the server
    measured = {r["uid"]: r["processes"] for r in ran}
    assert set(measured.values()) == {2}
    imported = run_cli("results", "import", str(kept), "--db", url)
    assert imported.returncode == 0, imported.stderr
    with Store(url, create=False) as store:  # every result, each with all its processes
        assert {r.uid: r.measurement.processes for r in store.results()} == measured


def _start_run(url: str, cwd: object) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if k != "ACCELBENCH_DB"}
    return subprocess.Popen(
        [sys.executable, "-m", "accelbench", *RUN, "--precisions", "fp32,bf16", "--db", url,
         "--json"],  # fmt: skip
        env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


_HOLD = 4242  # the advisory lock the test holds and a second save waits for


@contextlib.contextmanager
def _writes_after_the_first_held(cluster: Cluster, db: str) -> Iterator[None]:
    """Every save after the first result's waits for a lock this holds: the run is in the
    middle of a save when the server goes, not finished before the test could stop it."""
    import psycopg

    cluster.sql(
        "CREATE FUNCTION hold() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
        f"IF EXISTS (SELECT 1 FROM results) THEN PERFORM pg_advisory_xact_lock({_HOLD}); "
        "END IF; RETURN NEW; END $$",
        db=db,
    )
    cluster.sql("CREATE TRIGGER hold BEFORE INSERT OR UPDATE ON results "
                "FOR EACH ROW EXECUTE FUNCTION hold()", db=db)  # fmt: skip
    holder = psycopg.connect(cluster.url(db), autocommit=True)
    try:
        holder.execute(f"SELECT pg_advisory_lock({_HOLD})")
        yield
    finally:
        with contextlib.suppress(psycopg.Error):  # the server it held the lock on is gone
            holder.close()


def _wait_for_a_held_write(cluster: Cluster, db: str) -> None:
    waiting = f"SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = {_HOLD} "
    waiting += "AND NOT granted"
    deadline = time.monotonic() + 300
    while not cluster.sql(waiting, db=db)[0][0] and time.monotonic() < deadline:
        time.sleep(0.2)
