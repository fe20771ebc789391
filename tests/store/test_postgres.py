"""The store on a real PostgreSQL server (tests/store/conftest.py starts one): the schema and its
lock, every operation as on SQLite, many writers and claimers at once, a killed writer, a
server that restarts or stays down, read-only roles, and the password never shown."""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
from dataclasses import replace

import pytest

from accelbench.core.result import RunSpec
from accelbench.errors import StoreError
from accelbench.store import postgres
from accelbench.store.base import SCHEMA_VERSION
from accelbench.store.db import Filters, Store, read_results
from accelbench.store.results_file import read_export
from tests.store.conftest import READER_PASSWORD, WRITER_PASSWORD, Cluster
from tests.store.test_store import make_result

SPEC = RunSpec(workload="seed-cnn", device="cpu", batch_size=64, steps_per_block=20)


def _count(cluster: Cluster, url: str) -> int:
    db = url.rsplit("/", 1)[1].split("?")[0]
    return int(cluster.sql("SELECT count(*) FROM results", db=db)[0][0])  # type: ignore[arg-type]


def test_a_new_database_gets_the_current_schema_with_a_unique_uid(pg_cluster, pg_url):
    Store(pg_url).close()
    db = pg_url.rsplit("/", 1)[1]
    assert pg_cluster.sql("SELECT version FROM accelbench_schema", db=db) == [(SCHEMA_VERSION,)]
    tables = {r[0] for r in pg_cluster.sql("SELECT tablename FROM pg_tables WHERE "
                                           "schemaname = 'public'", db=db)}  # fmt: skip
    assert tables == {"accelbench_schema", "results", "calibrations", "claims"}
    with Store(pg_url) as store:  # opening again changes nothing
        store.save(make_result())
    unique = pg_cluster.sql("SELECT indexdef FROM pg_indexes WHERE indexdef LIKE '%UNIQUE%uid%'",
                            db=db)  # fmt: skip
    assert len(unique) == 1


def test_reading_an_empty_database_writes_nothing(pg_cluster, pg_url):
    with Store(pg_url, create=False) as store:
        assert store.results() == [] and store.calibrations() == {}
    db = pg_url.rsplit("/", 1)[1]
    assert pg_cluster.sql("SELECT tablename FROM pg_tables WHERE schemaname='public'", db=db) == []


def test_a_newer_schema_and_a_foreign_database_are_refused(pg_cluster, pg_url):
    Store(pg_url).close()
    db = pg_url.rsplit("/", 1)[1]
    pg_cluster.sql(f"UPDATE accelbench_schema SET version = {SCHEMA_VERSION + 1}", db=db)
    for create in (True, False):
        newer = rf"newer accelbench \(schema {SCHEMA_VERSION + 1}; this one reads up"
        with pytest.raises(StoreError, match=newer):
            Store(pg_url, create=create)
    other = pg_cluster.database()
    pg_cluster.sql("CREATE TABLE customers (name TEXT)", db=other)
    with pytest.raises(StoreError, match="not an accelbench database .it holds: customers"):
        Store(pg_cluster.url(other))


def test_a_database_another_process_is_setting_up_is_waited_for_then_said(
    pg_cluster, pg_url, monkeypatch
):
    import psycopg

    monkeypatch.setattr(postgres, "_SETUP_WAIT_S", 0.5)
    with psycopg.connect(pg_url) as holder:  # a transaction holding the set-up lock
        holder.execute("SELECT pg_advisory_xact_lock(%s)", (postgres._LOCK_KEY,))
        with pytest.raises(StoreError, match="being set up or migrated by another process"):
            Store(pg_url)
    Store(pg_url).close()  # the lock gone, it is set up


def _write_many(url: str, count: int) -> list[str]:
    with Store(url) as store:
        return [store.save(make_result()).uid for _ in range(count)]


def test_eight_writers_at_once_store_every_result_once(pg_cluster, pg_url):
    context = multiprocessing.get_context("spawn")
    with context.Pool(8) as pool:  # all open the new database at once: one creates it
        uids = pool.starmap(_write_many, [(pg_url, 25)] * 8)
    sent = [u for batch in uids for u in batch]
    with Store(pg_url, create=False) as store:
        stored = [r.uid for r in store.results()]
    assert len(sent) == 200 and sorted(stored) == sorted(sent)


def _claim_all(url: str, owner: str, specs: int) -> list[int]:
    with Store(url) as store:
        return [
            n
            for n in range(specs)
            if store.claim("sweep", replace(SPEC, batch_size=n + 1), owner, lambda h, b: False)
            is None
        ]


def test_two_claimers_at_once_split_the_configurations(pg_url):
    Store(pg_url).close()
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        a, b = pool.starmap(_claim_all, [(pg_url, "a", 60), (pg_url, "b", 60)])
    assert sorted(a + b) == list(range(60)) and not set(a) & set(b)


_KILLED_WRITER = """
import sys, time
from accelbench.store import postgres
from accelbench.store.base import to_row
from accelbench.store.db import Store
from tests.store.test_store import make_result
store = Store(sys.argv[1])
for _ in range(5):
    store.save(make_result())
with store._conn.transaction():
    store._conn.execute(postgres._UPSERT, to_row(make_result()))
    print("in the middle", flush=True)
    time.sleep(60)
"""


def test_a_writer_killed_mid_transaction_loses_nothing_committed(pg_cluster, pg_url):
    writer = subprocess.Popen([sys.executable, "-c", _KILLED_WRITER, pg_url],
                              stdout=subprocess.PIPE, text=True)  # fmt: skip
    assert writer.stdout is not None and writer.stdout.readline() == "in the middle\n"
    os.kill(writer.pid, signal.SIGKILL)
    writer.wait(timeout=30)
    with Store(pg_url) as store:
        assert len(store.results()) == 5  # the five committed; the sixth never was
        store.save(make_result())  # and the store goes on
    assert _count(pg_cluster, pg_url) == 6


def test_a_server_restart_is_retried_and_one_that_stays_down_keeps_results_in_a_file(
    pg_cluster, tmp_path, monkeypatch, capsys
):
    db = pg_cluster.database("writer")
    url = pg_cluster.url(db, "writer", WRITER_PASSWORD)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(postgres, "_RECONNECT_S", 0.5)
    store = Store(url)
    try:
        store.save(make_result())
        pg_cluster.stop()
        pg_cluster.start()
        assert store.save(make_result()).id is not None  # retried on a fresh connection
        pg_cluster.stop()
        kept = [store.save(make_result()) for _ in range(2)]
    finally:
        pg_cluster.start()
        store.close()
    assert [r.id for r in kept] == [None, None]
    said = capsys.readouterr().err.strip().splitlines()
    assert len(said) == 2 and "2 result(s) kept in accelbench-unsaved-" in said[-1]
    assert "accelbench results import accelbench-unsaved-" in said[-1]
    assert WRITER_PASSWORD not in "".join(said) and "writer:***@" in said[-1]
    (unsaved,) = tmp_path.glob("accelbench-unsaved-*.json")
    assert [r.uid for r in read_export(unsaved)] == [r.uid for r in kept]
    with Store(url) as store:
        assert store.import_results(read_results(unsaved)) == 2
        assert len(store.results()) == 4


def test_the_password_is_masked_in_every_location_and_error(pg_cluster):
    db = pg_cluster.database("writer")
    url = pg_cluster.url(db, "writer", WRITER_PASSWORD, query="sslmode=disable")
    encoded = url.split(":")[2].split("@")[0]
    with Store(url) as store:
        assert store.path == store.location == (
            f"postgresql://writer:***@127.0.0.1:{pg_cluster.port}/{db}?sslmode=disable"
        )
    bad = [
        url.replace(encoded, "wrong"),  # wrong password
        url.replace(f"/{db}?", "/nosuchdb?"),  # missing database
        url + "&nosuchoption=1",  # malformed: libpq echoes the whole URL
        url.replace("127.0.0.1", "[::1"),  # malformed host
        url.replace(f":{pg_cluster.port}/", ":1/"),  # nothing listens there
        f"postgresql://writer@127.0.0.1:{pg_cluster.port}/{db}?password={encoded}&x=1",
    ]
    for wrong in bad:
        with pytest.raises(StoreError) as raised:
            Store(wrong)
        said = str(raised.value)
        assert "\n" not in said and "***" in said, said
        for secret in (WRITER_PASSWORD, encoded, "wrong"):
            assert secret not in said, said


def test_a_role_that_may_only_read_reads_and_is_refused_writing(pg_cluster):
    db = pg_cluster.database("writer")
    with Store(pg_cluster.url(db, "writer", WRITER_PASSWORD)) as store:
        store.save(make_result())
    reader = pg_cluster.url(db, "reader", READER_PASSWORD)
    with Store(reader, create=False) as store:
        assert len(store.results(Filters(host="h"))) == 1
    with pytest.raises(StoreError, match="role 'reader' may only read it"):
        Store(reader)
    empty = pg_cluster.url(pg_cluster.database("writer"), "reader", READER_PASSWORD)
    with pytest.raises(StoreError, match="cannot write to .*permission denied"):
        Store(empty)  # it would have to create the schema


def test_an_sqlite_store_reads_whole_for_import_with_its_uids(tmp_path, pg_url):
    old = tmp_path / "old.db"
    with Store(old) as store:
        saved = [store.save(make_result()) for _ in range(3)]
    found = read_results(old)
    assert [r.uid for r in found] == [r.uid for r in saved]  # oldest first
    with Store(pg_url) as store:
        assert store.import_results(found) == 3
        assert store.import_results(read_results(old)) == 0
        assert {r.uid for r in store.results()} == {r.uid for r in saved}


def test_the_urls_query_reaches_the_driver_and_postgres_scheme_works(pg_cluster, pg_url):
    with pytest.raises(StoreError, match="server does not support SSL, but SSL was required"):
        Store(pg_url + "?sslmode=require")  # TLS settings pass through (this server has none)
    short = pg_url.replace("postgresql://", "postgres://")
    with Store(short + "?sslmode=disable&application_name=mine") as store:
        assert store.save(make_result()).id is not None
        assert store.location.startswith("postgres://postgres@")


def test_a_bulk_import_leaves_the_planner_statistics_and_a_small_one_does_not(pg_cluster, pg_url):
    """Without statistics the planner reads every row of a workload to find its newest runs
    (a history: `results` on 100,000 took 3 s, not 1): an import of BULK_ROWS gathers them."""
    db = pg_url.rsplit("/", 1)[1]

    def analyzed() -> int:
        found = pg_cluster.sql("SELECT analyze_count FROM pg_stat_user_tables "
                               "WHERE relname = 'results'", db=db)  # fmt: skip
        return int(found[0][0])  # type: ignore[arg-type]

    with Store(pg_url) as store:
        store.import_results([replace(make_result(), uid=f"small-{n}") for n in range(10)])
        before = analyzed()
        bulk = [replace(make_result(), uid=f"bulk-{n}") for n in range(postgres.BULK_ROWS)]
        assert store.import_results(bulk) == postgres.BULK_ROWS
        assert store.import_results(bulk) == 0  # nothing new: no statistics gathered again
    assert before == 0 and analyzed() == 1
