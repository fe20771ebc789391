"""Export and import: a lossless round trip, idempotence, and every kind of bad file."""

import json
import sqlite3

import pytest

from accelbench.core.result import Result, RunSpec
from accelbench.core.stats import Measurement
from accelbench.errors import StoreError
from accelbench.levers import label, spec_with
from accelbench.store.db import Store
from accelbench.store.results_file import read_export, write_export
from tests.conftest import digest, run_cli


def _result(device="cpu", samples=(0.5, 0.25, 0.4), host="laptop"):
    return Result(
        spec=spec_with(RunSpec("seed-cnn", device, 64, 20, precision="bf16"), channels_last=True),
        status="ok",
        measurement=Measurement(samples, (0.9,), repeat=2),
        peak_memory=12345,
        peak_memory_meaning="peak RSS",
        environment={"host": host, "torch": "2.14.1"},
        metrics={"mfu": 0.25, "verdict": {"kind": "launch-bound", "explanation": "x"}},
        sweep="abc123",
    )


@pytest.fixture
def exported(tmp_path):
    """An export file of two results, taken from a real database."""
    source = tmp_path / "source.db"
    with Store(source) as store:
        store.save(_result())
        store.save(Result(spec=RunSpec("mlp", "cuda:0", 100, 1), status="oom", error="OOM"))
    with Store(source) as store:
        results = store.results()
    path = tmp_path / "export.json"
    write_export(results[::-1], path)  # oldest first, as `results export` writes
    return path, results


def test_round_trip_is_lossless(exported, tmp_path):
    path, original = exported
    with Store(tmp_path / "other.db") as store:
        assert store.import_results(read_export(path)) == 2
        back = store.results()
    strip = [r.to_record() for r in original]
    assert [r.to_record() for r in back] == strip
    assert back[1].measurement.repeat == 2 and back[1].metrics["mfu"] == 0.25


def test_importing_twice_adds_nothing(exported, tmp_path):
    path, _ = exported
    with Store(tmp_path / "other.db") as store:
        assert store.import_results(read_export(path)) == 2
        assert store.import_results(read_export(path)) == 0
        assert len(store.results()) == 2


def _broken(path, change):
    payload = json.loads(path.read_text())
    change(payload)
    path.write_text(json.dumps(payload))
    return path


def _cut(path):
    text = path.read_text()
    path.write_text(text[: len(text) // 2])
    return path


BAD_FILES = {
    "truncated": (lambda p: _cut(p), "is truncated or not JSON"),
    "not ours": (
        lambda p: _broken(p, lambda d: d.update(format="something-else")),
        "is not an accelbench export",
    ),
    "newer": (
        lambda p: _broken(p, lambda d: d.update(version=99)),
        "is export version 99, newer than this accelbench reads",
    ),
    "no version yet": (
        lambda p: _broken(p, lambda d: d.update(version=-1)),
        "is export version -1, which no accelbench writes; accelbench exports are versions 1 to",
    ),
    # true would read as version 1, and its lever fields be replaced by version 1's defaults
    "boolean version": (
        lambda p: _broken(p, lambda d: d.update(version=True)),
        'has "version": true, not a whole number; accelbench exports are versions 1 to',
    ),
    "text version": (
        lambda p: _broken(p, lambda d: d.update(version="4")),
        'has "version": "4", not a whole number',
    ),
    "unknown field": (
        lambda p: _broken(p, lambda d: d["results"][1].update(note="kept?", colour=1)),
        "result 2 of 2 is damaged: it has fields accelbench results do not have ('colour', "
        "'note'), which importing would drop",
    ),
    "missing field": (
        lambda p: _broken(p, lambda d: d["results"][1].pop("spec")),
        "result 2 of 2 is damaged: missing 'spec'",
    ),
    "wrong type": (
        lambda p: _broken(p, lambda d: d["results"][0].update(samples="fast")),
        "result 1 of 2 is damaged: 'samples' has the wrong type (str)",
    ),
    "negative time": (
        lambda p: _broken(p, lambda d: d["results"][0].update(samples=[-1.0])),
        "samples must be positive",
    ),
    "bad status": (
        lambda p: _broken(p, lambda d: d["results"][0].update(status="great")),
        "unknown status 'great'",
    ),
    "text batch": (
        lambda p: _broken(p, lambda d: d["results"][0]["spec"].update(batch_size="x")),
        "spec 'batch_size' has the wrong type (str)",
    ),
    "zero steps": (
        lambda p: _broken(p, lambda d: d["results"][0]["spec"].update(steps_per_block=0)),
        "spec 'steps_per_block' must be 1 or more",
    ),
    "unknown precision": (
        lambda p: _broken(p, lambda d: d["results"][0]["spec"].update(precision="fp8")),
        "result 1 of 2 is damaged: spec: unknown precision 'fp8'; valid: fp32, tf32",
    ),
    "odd environment": (
        lambda p: _broken(p, lambda d: d["results"][0]["environment"].update(host=[1, 2])),
        "environment must map names to text",
    ),
    "bad spec": (
        lambda p: _broken(p, lambda d: d["results"][0]["spec"].update(colour="red")),
        "spec has fields",
    ),
    "bad pruning": (
        lambda p: _broken(
            p, lambda d: d["results"][0]["spec"]["levers"].update(pruning="channels:2")
        ),
        "result 1 of 2 is damaged: pruning amount must be between 0 and 1",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_FILES))
def test_bad_files_are_refused_in_one_line_and_the_database_is_unchanged(exported, tmp_path, case):
    path, _ = exported
    make, message = BAD_FILES[case]
    db = tmp_path / "kept.db"
    with Store(db) as store:
        store.save(_result(host="kept"))
    before = digest(db)
    out = run_cli("results", "import", str(make(path)), "--db", str(db))
    assert out.returncode == 2
    assert message in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert digest(db) == before


def test_options_given_before_the_action_are_kept(tmp_path):
    db = tmp_path / "a.db"
    with Store(db) as store:
        store.save(_result(device="cpu"))
    out_file = tmp_path / "e.json"
    assert run_cli("results", "--db", str(db), "export", "--out", str(out_file)).returncode == 0
    assert len(read_export(out_file)) == 1
    none = run_cli(
        "results", "--workload", "nothing", "--db", str(db), "export", "--out", str(out_file)
    )
    assert "exported 0 result(s)" in none.stdout
    other = tmp_path / "b.db"
    run_cli("results", "--db", str(other), "import", str(out_file), cwd=tmp_path)
    assert other.exists() and not (tmp_path / "accelbench.db").exists()


def test_read_export_names_a_missing_file(tmp_path):
    with pytest.raises(StoreError, match="no such file"):
        read_export(tmp_path / "nothing.json")


def test_import_into_a_foreign_database_is_refused(exported, tmp_path):
    path, _ = exported
    foreign = tmp_path / "foreign.db"
    conn = sqlite3.connect(foreign)
    conn.execute("CREATE TABLE t (x)")
    conn.commit()
    conn.close()
    before = digest(foreign)
    out = run_cli("results", "import", str(path), "--db", str(foreign))
    assert out.returncode == 2 and "not an accelbench database" in out.stderr
    assert digest(foreign) == before


def test_cli_export_with_filters_and_import(tmp_path):
    db = tmp_path / "a.db"
    with Store(db) as store:
        store.save(_result(device="cpu"))
        store.save(_result(device="cuda:0"))
    out_file = tmp_path / "cuda.json"
    out = run_cli(
        "results", "export", "--out", str(out_file), "--device", "cuda:0", "--db", str(db)
    )
    assert out.returncode == 0, out.stderr
    assert "exported 1 result(s)" in out.stdout
    other = tmp_path / "b.db"
    first = run_cli("results", "import", str(out_file), "--db", str(other))
    again = run_cli("results", "import", str(out_file), "--db", str(other))
    assert "1 new" in first.stdout and "0 new, 1 already stored" in again.stdout
    listed = json.loads(run_cli("results", "--json", "--db", str(other)).stdout)
    assert [r["spec"]["device"] for r in listed] == ["cuda:0"]


def test_pruning_round_trips_and_files_from_before_it_import_unpruned(tmp_path):
    pruned = _result()
    pruned = Result(
        spec=spec_with(
            RunSpec("seed-cnn", "cpu", 64, 20, mode="infer"), pruning="unstructured:0.5"
        ),
        status="ok",
        measurement=Measurement((0.5, 0.4)),
        metrics={
            "pruning": {
                "method": "unstructured:0.5",
                "params_before": 10,
                "params_after": 10,
                "zero_fraction": 0.5,
            }
        },
    )
    path = tmp_path / "pruned.json"
    write_export([pruned], path)
    (back,) = read_export(path)
    assert back.spec.lever("pruning", "") == "unstructured:0.5"
    assert back.to_record() == pruned.to_record()
    older = json.loads(path.read_text())
    del older["results"][0]["spec"]["levers"]  # written before any lever was set
    path.write_text(json.dumps(older))
    (old,) = read_export(path)
    assert old.spec.levers == () and label(old.spec) == "infer fp32 b64"
