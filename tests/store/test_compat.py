"""What the previous version wrote still reads: a schema-6 database (lever columns) and an
export-version-2 file (lever fields in the spec), both made by accelbench before levers were
registered objects. Identical configurations keep their sweep ids; --resume into such a sweep,
measured in one process per configuration, is refused in one line, the database untouched."""

import json
import shutil

from accelbench.levers import check_levers, label
from accelbench.store.db import Store
from accelbench.store.results_file import read_export
from tests.conftest import TESTS, digest, run_cli

DATA = TESTS / "data"
# The labels the previous version printed for the fixtures' five results, newest first.
LABELS = [
    "infer fp32 b64 cuda_graphs pruned-unstructured:0.5",
    "infer bf16 b64 1 thread",
    "infer fp32 b64 1 thread",
    "train bf16 b64 1 thread",
    "train fp32 b64 1 thread",
]
# The sweeps that made them, as the previous version's `run` printed their ids.
FIRST = ["seed-cnn", "--devices", "cpu", "--modes", "train,infer", "--precisions", "fp32,bf16"]
FIRST += ["--memory-formats", "contiguous", "--threads", "1"]
SECOND = ["seed-cnn", "--devices", "cpu", "--modes", "infer", "--pruning", "unstructured:0.5"]
SECOND += ["--compile", "off", "--cuda-graphs", "on"]
SWEEPS = {"1ad77903ed15": FIRST, "23fa21280b16": SECOND}
TIMING = ["--blocks", "3", "--warmup", "1", "--no-verdict"]


def _old_db(tmp_path):
    path = tmp_path / "old.db"
    shutil.copy(DATA / "schema6.db", path)
    return path


def test_a_schema_6_database_migrates_with_every_lever_in_place(tmp_path):
    with Store(_old_db(tmp_path)) as store:
        results = store.results()
    assert [label(r.spec) for r in results] == LABELS
    assert results[0].spec.levers == (("cuda_graphs", True), ("pruning", "unstructured:0.5"))
    assert results[1].spec.levers == (("threads", 1),)
    for result in results:
        check_levers(result.spec)
    assert [r.status for r in results] == ["unsupported", "ok", "ok", "ok", "ok"]
    assert all(len(r.measurement.samples) == 3 for r in results[1:])


def test_an_export_version_2_file_reads_as_the_same_results(tmp_path):
    with Store(_old_db(tmp_path)) as store:
        stored = {r.uid: r.spec for r in store.results()}
    imported = read_export(DATA / "export-v2.json", check_levers)
    assert {r.uid: r.spec for r in imported} == stored


def test_the_same_sweep_keeps_its_id_and_resume_into_it_is_refused(tmp_path):
    db = _old_db(tmp_path)
    before = digest(db)
    for sweep, args in SWEEPS.items():
        out = run_cli("run", *args, *TIMING, "--resume", "--db", str(db), "--quiet")
        assert out.returncode == 2 and out.stdout == ""
        assert f"--resume: sweep {sweep} was stored by an earlier accelbench" in out.stderr
        assert len(out.stderr.strip().splitlines()) == 1
    assert digest(db) == before  # nothing stored is changed
    with Store(db, create=False) as store:
        assert len(store.results()) == 5  # and every result still reads


def test_results_of_the_previous_release_list_compare_and_report_as_one_process_each(tmp_path):
    db = _old_db(tmp_path)
    listed = run_cli("results", "--json", "--db", str(db))
    assert listed.returncode == 0, listed.stderr
    rows = json.loads(listed.stdout)
    measured = [r for r in rows if r["status"] == "ok"]
    assert measured and all(r["processes"] == 1 and r["rounds"] == [] for r in measured)
    assert all(
        any(c["text"].startswith("1 process (stored by an accelbench that ran one)")
            for c in r["caveats"])
        for r in measured
    )  # fmt: skip
    compared = run_cli("compare", "--by", "precision", "--db", str(db))
    assert compared.returncode == 0, compared.stderr
    assert "ran in 1 process: too few to bound the spread" in compared.stdout
    report = run_cli("report", "--format", "markdown", "--db", str(db))
    assert report.returncode == 0 and "stored by an accelbench that ran one" in report.stdout
