"""What accelbench wrote before modes owned their options still reads, unchanged: a schema-10
SQLite store and a results file v4 (tests/data/schema10.db, results-v4.json), both made at
commit 18e67eb, before mode arguments, by

    run gpt2-tiny --devices cpu --modes generate --prompt-lengths 12 --new-tokens 6
    run seed-cnn --devices cpu --modes train --threads 1        (3 epochs each)
    results export --out results-v4.json

Generate's two columns (fields, in the file) become its mode arguments; labels, `--json`'s
spec fields and the sweeps' ids are what that version printed. The same migration on a
PostgreSQL schema-10 database (its two columns) is checked on the session's server."""

from __future__ import annotations

import json
import shutil
import sqlite3

from accelbench.engine.sweep import Sweep
from accelbench.levers import check_levers, label, spec_json
from accelbench.store import postgres
from accelbench.store.db import SCHEMA_VERSION, Store
from accelbench.store.results_file import read_export
from accelbench.workloads import WorkloadRef
from tests.conftest import TESTS

DATA = TESTS / "data"
# What the version that wrote the fixtures printed, newest first.
LABELS = ["train fp32 b64 1 thread", "generate fp32 b1 p12 n6"]
SWEEPS = ["6a87f088a0f0", "ef7a4deda0cd"]
GENERATE_SPEC = {  # the spec's fields in that version's `results --json` (lever defaults too)
    "workload": "gpt2-tiny",
    "device": "cpu",
    "batch_size": 1,
    "steps_per_block": 1,
    "mode": "generate",
    "precision": "fp32",
    "backend": "torch",
    "prompt_length": 12,
    "new_tokens": 6,
    "channels_last": False,
    "attention": "",
    "kv_cache": "",
    "compile": "",
    "cuda_graphs": False,
    "cudnn_benchmark": False,
    "optimizer": "",
    "threads": 0,
    "processes": 1,
    "pruning": "",
}


def _check(results):
    assert [label(r.spec) for r in results] == LABELS
    assert [r.sweep for r in results] == SWEEPS
    train, generate = (r.spec for r in results)
    assert train.mode_args == () and train.levers == (("threads", 1),)
    assert generate.mode_args == (("new_tokens", 6), ("prompt_length", 12))
    assert spec_json(generate) == GENERATE_SPEC
    assert list(spec_json(generate))[:9] == list(GENERATE_SPEC)[:9]  # CSV's column order
    assert results[1].samples_per_block == 6  # tokens: b1 x 6 new tokens
    for result in results:
        check_levers(result.spec)


def test_a_schema_10_store_migrates_generates_columns_into_mode_args(tmp_path):
    db = tmp_path / "old.db"
    shutil.copy(DATA / "schema10.db", db)
    with Store(db, create=False) as store:  # read-only: migrated in memory, the file untouched
        _check(store.results())
    with Store(db) as store:
        _check(store.results())
    conn = sqlite3.connect(db)
    columns = {row[1] for row in conn.execute("PRAGMA table_info(results)")}
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 11
    assert "mode_args" in columns and not {"prompt_length", "new_tokens"} & columns
    stored = [r[0] for r in conn.execute("SELECT mode_args FROM results ORDER BY id")]
    assert [json.loads(text) for text in stored] == [{"new_tokens": 6, "prompt_length": 12}, {}]


def test_a_results_file_v4_reads_as_the_same_results(tmp_path):
    with Store(DATA / "schema10.db", create=False) as store:
        stored = {r.uid: r.spec for r in store.results()}
    imported = read_export(DATA / "results-v4.json", check_levers)
    assert {r.uid: r.spec for r in imported} == stored
    _check(sorted(imported, key=lambda r: r.created_at, reverse=True))


def test_the_same_sweeps_keep_their_ids():
    """--resume finds a sweep by its id: asked again, the fixtures' sweeps have theirs."""
    generate = Sweep(
        (WorkloadRef("gpt2-tiny"),),
        ("cpu",),
        modes=("generate",),
        mode_args=(("prompt_length", (12,)), ("new_tokens", (6,))),
        blocks=3,
    )
    train = Sweep(
        (WorkloadRef("seed-cnn"),),
        ("cpu",),
        modes=("train",),
        levers=(("threads", (1,)),),
        blocks=3,
    )
    assert [train.id, generate.id] == SWEEPS


def test_a_postgres_schema_10_database_migrates_the_same(pg_cluster, pg_url):
    """A v10 database made with version 10's DDL and the fixture's rows in its columns."""
    db = pg_url.rsplit("/", 1)[1]
    pg_cluster.sql(postgres._SCHEMA, db=db)  # noqa: SLF001 (the version-10 DDL, kept frozen)
    rows = sqlite3.connect(DATA / "schema10.db").execute("SELECT * FROM results")
    names = [column[0] for column in rows.description]
    for row in rows:
        kept = {n: v for n, v in zip(names, row, strict=True) if n != "id"}
        values = ", ".join(_literal(v) for v in kept.values())
        pg_cluster.sql(f"INSERT INTO results ({', '.join(kept)}) VALUES ({values})", db=db)
    with Store(pg_url) as store:  # opened to write: migrated
        _check(store.results())
    assert pg_cluster.sql("SELECT version FROM accelbench_schema", db=db) == [(SCHEMA_VERSION,)]


def _literal(value: object) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, (int, float)):
        return repr(value)
    return "'" + str(value).replace("'", "''") + "'"
