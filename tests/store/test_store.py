import sqlite3
from dataclasses import replace

import pytest

from accelbench.core.peaks import PeakFigures
from accelbench.core.result import Result, RunSpec
from accelbench.core.stats import Measurement
from accelbench.errors import StoreError
from accelbench.levers import spec_with
from accelbench.store.db import SCHEMA_VERSION, Filters, Store
from tests.conftest import digest

SPEC = RunSpec(workload="seed-cnn", device="cpu", batch_size=64, steps_per_block=20)


def make_result(samples=(0.5, 0.4, 0.6), status="ok"):
    return Result(
        spec=SPEC,
        status=status,
        measurement=Measurement(samples=samples, warmup=(0.9,)) if samples else None,
        error="" if status == "ok" else "RuntimeError: boom",
        peak_memory=123456,
        peak_memory_meaning="peak RSS",
        environment={"host": "h", "torch": "2.x"},
        created_at="2026-11-30T00:00:00+00:00",
    )


def test_round_trip_keeps_everything(location):
    path = location
    with Store(path) as store:
        saved = store.save(make_result())
        failed = store.save(make_result(samples=(), status="oom"))
    with Store(path) as store:
        back = store.results()
    assert [r.id for r in back] == [failed.id, saved.id]  # newest first
    assert back[1] == saved
    assert back[0].measurement is None and back[0].status == "oom"
    assert back[1].measurement.samples == (0.5, 0.4, 0.6)
    assert back[1].measurement.warmup == (0.9,)


def test_filter_and_limit(location):
    with Store(location) as store:
        for _ in range(3):
            store.save(make_result())
        assert len(store.results(limit=2)) == 2
        assert store.results(Filters(workload="mlp")) == []
        assert len(store.results(Filters(workload="seed-cnn"))) == 3
        assert len(store.results(Filters(host="h", precision="fp32"))) == 3
        assert store.results(Filters(host="elsewhere")) == []



def test_the_runs_of_a_key_are_its_own_sweep_and_its_suffixed_runs_newest_first(location):
    """--resume finds a command's newest run by its options' key (workflows/benchmark.resumed):
    the key itself (a run stored before runs had ids of their own), or the key, a dash and a
    suffix; never a longer key that begins the same, on either backend's SQL."""
    with Store(location) as store:
        for sweep in ("k1", "k1-aa", "k1x-bb", "other", "k1-cc"):
            store.save(replace(make_result(), sweep=sweep))
        assert [r.sweep for r in store.results(Filters(runs_of="k1"))] == ["k1-cc", "k1-aa", "k1"]
        assert store.results(Filters(runs_of="k1"), limit=1)[0].sweep == "k1-cc"

def test_empty_file_becomes_a_database(tmp_path):
    path = tmp_path / "empty.db"
    path.write_bytes(b"")
    with Store(path) as store:
        store.save(make_result())


def test_foreign_sqlite_database_is_refused_and_unchanged(tmp_path):
    path = tmp_path / "other.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE customers (name TEXT)")
    conn.commit()
    conn.close()
    before = digest(path)
    with pytest.raises(StoreError, match="not an accelbench database .*customers"):
        Store(path)
    assert digest(path) == before


def test_non_sqlite_file_is_refused_and_unchanged(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("shopping list\n")
    with pytest.raises(StoreError, match="not an accelbench database"):
        Store(path)
    assert path.read_text() == "shopping list\n"


def test_newer_schema_is_refused(tmp_path):
    path = tmp_path / "new.db"
    Store(path).close()
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match="newer accelbench"):
        Store(path)


def test_directory_and_missing_parent_are_refused(tmp_path):
    with pytest.raises(StoreError, match="is a directory"):
        Store(tmp_path)
    with pytest.raises(StoreError, match="does not exist"):
        Store(tmp_path / "no" / "such.db")
    with pytest.raises(StoreError, match="no results database"):
        Store(tmp_path / "absent.db", create=False)
    assert not (tmp_path / "absent.db").exists()


def test_a_version_1_database_migrates_forward_and_keeps_its_rows(tmp_path):
    from accelbench.store.sqlite import _SCHEMA_V1, APPLICATION_ID

    path = tmp_path / "v1.db"
    conn = sqlite3.connect(path)
    conn.executescript(
        f"{_SCHEMA_V1} PRAGMA application_id = {APPLICATION_ID}; PRAGMA user_version = 1;"
    )
    conn.execute(
        "INSERT INTO results (created_at, workload, device, batch_size, steps_per_block, mode, "
        "precision, backend, status, error, samples, warmup, peak_memory, peak_memory_meaning, "
        "environment) VALUES ('2026-11-30T00:00:00+00:00', 'seed-cnn', 'cpu', 64, 20, 'train', "
        "'fp32', 'torch', 'ok', '', '[0.5, 0.6]', '[0.9]', 10, 'peak RSS', '{}')"
    )
    conn.commit()
    conn.close()
    with Store(path) as store:
        (old,) = store.results()
        assert old.spec == RunSpec("seed-cnn", "cpu", 64, 20)
        assert old.measurement.samples == (0.5, 0.6) and old.sweep == "" and old.metrics == {}
        store.save(make_result())
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    conn.close()


def test_a_version_5_database_gains_the_pruning_column_and_keeps_its_rows(tmp_path):
    from accelbench.store.sqlite import _MIGRATIONS, _SCHEMA_V1, APPLICATION_ID

    path = tmp_path / "v5.db"
    conn = sqlite3.connect(path)
    steps = " ".join(_MIGRATIONS[v] for v in range(2, 6))
    conn.executescript(
        f"{_SCHEMA_V1} {steps} PRAGMA application_id = {APPLICATION_ID}; PRAGMA user_version = 5;"
    )
    conn.execute(
        "INSERT INTO results (created_at, workload, device, batch_size, steps_per_block, mode, "
        "precision, backend, status, error, samples, warmup, peak_memory, peak_memory_meaning, "
        "environment, uid, processes) VALUES ('2026-11-30T00:00:00+00:00', 'seed-cnn', 'cpu', "
        "64, 20, 'infer', 'fp32', 'torch', 'ok', '', '[0.5, 0.6]', '[0.9]', 10, 'peak RSS', "
        "'{}', 'old', 2)"
    )
    conn.commit()
    conn.close()
    with Store(path) as store:
        (old,) = store.results()
        assert old.spec == spec_with(RunSpec("seed-cnn", "cpu", 64, 20, mode="infer"), processes=2)
        assert old.spec.lever("pruning", "") == "" and old.uid == "old"
        pruned = make_result()
        spec = spec_with(replace(SPEC, mode="infer"), pruning="channels:0.3")
        store.save(replace(pruned, spec=spec))
        assert store.results()[0].spec.lever("pruning", "") == "channels:0.3"
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 11
    conn.close()


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"precision": "fp8"}, "unknown precision 'fp8'; valid: fp32, tf32, fp16, bf16, int8"),
        ({"status": "great"}, "unknown status 'great'; valid: ok, oom, error, timeout,"),
    ],
)
def test_filters_outside_the_vocabulary_are_refused_not_matched_to_nothing(fields, said):
    from accelbench.errors import UsageError

    with pytest.raises(UsageError, match=said):
        Filters(**fields)


def test_save_replaces_by_uid_and_import_adds_only_what_is_missing(location):
    with Store(location) as store:
        first = store.save(make_result())
        again = store.save(replace(first, status="oom", measurement=None, error="x"))
        assert again.id == first.id and [r.status for r in store.results()] == ["oom"]
        others = [make_result() for _ in range(3)]
        assert store.import_results([first, *others]) == 3
        assert store.import_results([first, *others]) == 0  # twice adds nothing
        assert store.import_results([]) == 0
        assert len(store.results()) == 4
        assert store.results(Filters(id=first.id))[0].status == "oom"


def test_calibrations_round_trip_newest_wins(location):
    with Store(location) as store:
        assert store.calibrations() == {}
        store.save_calibration("cpu", "Xeon", "h", PeakFigures({"fp32": 1e12}, 5e10, "measured"))
        store.save_calibration("cpu", "Xeon", "h", PeakFigures({"fp32": 2e12}, None, "measured"))
    with Store(location, create=False) as store:
        assert store.calibrations() == {"Xeon": PeakFigures({"fp32": 2e12}, None, "measured")}


def test_claims_on_every_backend(location):
    with Store(location) as store:
        assert store.claim("s", SPEC, "a", lambda h, b: False) is None  # free: a's
        assert store.claim("s", SPEC, "b", lambda h, b: False) == "a"  # a is at it
        assert store.claim("s", SPEC, "a", lambda h, b: False) is None  # a renews
        assert store.claim("s", SPEC, "b", lambda h, b: h == "a") is None  # a is gone: b's
        assert store.claim("s", SPEC, "a", lambda h, b: False) == "b"
        store.release("s", SPEC, "a")  # not a's: nothing happens
        assert store.claim("s", SPEC, "a", lambda h, b: False) == "b"
        store.release("s", SPEC, "b")
        assert store.claim("s", SPEC, "a", lambda h, b: False) is None
