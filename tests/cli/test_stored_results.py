"""Commands over stored results (issue 15, items 2, 8, 10, 11 and 14): verify's paired
accuracy test, compare's device column, a quiet export into a new folder, read-only commands
without torch, results as CSV."""

from __future__ import annotations

import os
import sys
import textwrap

import pytest

from accelbench.analysis.compare import BASE_DIMENSIONS, compare
from accelbench.analysis.paired import UNDETERMINED, WITHIN, WORSE, PairedAccuracy, paired_accuracy
from accelbench.cli.main import main
from accelbench.core.result import Result, RunSpec
from accelbench.core.stats import Measurement
from accelbench.exporters import library_output
from accelbench.render.console import compare_table, verify_table
from accelbench.store.db import Store
from accelbench.workflows.verify import Settings, judge_against_baseline
from tests.conftest import run_cli

# --- item 2: verify judges accuracy with a paired, one-sided test --------------------------


def _verify_run(device: str, correct: str, precision: str = "fp32") -> Result:
    facts = {
        "loss_curve": [2.3, 0.6, 0.2],
        "accuracy": correct.count("1") / len(correct),
        "held_out_correct": correct,
    }
    spec = RunSpec("w", device, 32, 44, precision=precision)
    return Result(spec=spec, status="ok", metrics={"verify": facts})


def _pair(both: int, base_only: int, run_only: int, neither: int) -> tuple[str, str]:
    """Per-image results of a baseline and a run with these 2x2 cells."""
    base = "1" * both + "1" * base_only + "0" * run_only + "0" * neither
    run = "1" * both + "0" * base_only + "1" * run_only + "0" * neither
    return base, run


def _verdict(base_only: int, run_only: int, both: int = 330, neither: int = 20) -> dict:
    base, run = _pair(both, base_only, run_only, neither)
    baseline = _verify_run("cpu", base)
    judged = judge_against_baseline(_verify_run("cuda:0", run, "bf16"), baseline, Settings())
    return judged.metrics["verify"]


def test_the_paired_interval_matches_newcombes_hybrid_score_interval():
    # Fagerland, Lydersen and Laake (2013), Bentur et al.'s 21 pairs (1, 1, 7, 12): the
    # difference -0.286 and Newcombe's interval -0.502 to -0.036.
    table = PairedAccuracy(both=1, candidate_only=1, reference_only=7, neither=12)
    low, high = table.interval()
    assert table.difference == pytest.approx(-6 / 21)
    assert (round(low, 3), round(high, 3)) == (-0.502, -0.036)
    # identical runs: a narrow interval around 0, not a point
    same = paired_accuracy("1" * 340 + "0" * 20, "1" * 340 + "0" * 20)
    assert same.interval()[0] < 0 < same.interval()[1] and same.judge(0.02) == WITHIN


def test_a_more_accurate_run_never_diverges():
    # the case: +2.2 points (8 images) beyond a 2-point tolerance
    better = _verdict(base_only=1, run_only=9)
    assert better["accuracy_diff_points"] == pytest.approx(800 / 360)
    assert better["verdict"] == "ok" and "reasons" not in better
    assert better["accuracy_note"] == "+2.2 points, 95% CI +0.5 to +4.3: within tolerance"
    for run_only in (15, 30):  # far better: still never a divergence
        assert _verdict(base_only=0, run_only=run_only, neither=30 - run_only)["verdict"] == "ok"


def test_a_significantly_worse_run_diverges_and_says_the_interval():
    worse = _verdict(base_only=12, run_only=1, neither=17)
    assert worse["accuracy_judgement"] == WORSE and worse["verdict"] == "diverges"
    assert worse["paired"] == pytest.approx(
        {
            "images": 360,
            "reference_only": 12,
            "candidate_only": 1,
            "ci95_low_points": worse["paired"]["ci95_low_points"],
            "ci95_high_points": worse["paired"]["ci95_high_points"],
        }
    )
    assert worse["paired"]["ci95_high_points"] < 0
    assert worse["reasons"][0].startswith("held-out accuracy worse: -3.1 points, 95% CI -5.")
    base, run = _pair(330, 12, 1, 17)
    rows = [
        judge_against_baseline(_verify_run("cpu", base), _verify_run("cpu", base), Settings()),
        judge_against_baseline(_verify_run("cuda:0", run), _verify_run("cpu", base), Settings()),
    ]
    table = verify_table(rows, width=400)
    assert "-3.1 points [-5." in table and "DIVERGES: held-out accuracy worse" in table
    assert "then its paired 95% interval over the same images" in table  # not eaten as markup


def test_a_small_sample_tie_is_undetermined_not_a_divergence():
    tie = _verdict(base_only=2, run_only=2, both=36, neither=0)  # 40 images
    assert tie["accuracy_judgement"] == UNDETERMINED and tie["verdict"] == "undetermined"
    assert "reasons" not in tie
    assert tie["accuracy_note"].startswith("undetermined: +0.0 points, 95% CI -")
    assert "40 held-out images cannot tell whether it is worse by 2 points" in tie["accuracy_note"]
    # 5 points worse (2 of 40 images): not significant, so still not a divergence
    assert _verdict(base_only=3, run_only=1, both=36, neither=0)["verdict"] == "undetermined"
    # 360 images that disagree on 8 each way cannot rule out a 2-point drop either
    assert _verdict(base_only=8, run_only=8)["verdict"] == "undetermined"


# --- item 8: compare's rows name their device --------------------------------------------


def _timed(device: str, machine: str, seconds: float) -> Result:
    samples = tuple(seconds * (1 + 0.01 * i) for i in range(10))
    return Result(
        spec=RunSpec("seed-cnn", device, 64, 20),
        status="ok",
        measurement=Measurement(samples),
        environment={"host": machine, "machine": machine},
    )


def test_compare_by_machine_tells_a_gpu_row_from_a_cpu_row_of_one_machine():
    results = [
        _timed("cuda:0", "vm-64b467", 0.05),
        _timed("cpu", "vm-64b467", 2.0),
        _timed("cpu", "laptop", 1.0),
    ]
    table = compare_table(compare(results, BASE_DIMENSIONS["machine"]), width=200)
    header = next(line for line in table.splitlines() if "workload" in line)
    assert [cell.strip() for cell in header.strip("┃").split("┃")][:4] == [
        "workload",
        "device",
        "configuration",
        "machine",
    ]
    rows = [line for line in table.splitlines() if "seed-cnn" in line]
    assert len(rows) == 3
    assert sum("│ cuda:0 " in row for row in rows) == 1
    assert sum("│ cpu " in row for row in rows) == 2
    # compared by device, the compared column names the device: no second device column
    by_device = compare_table(compare(results, BASE_DIMENSIONS["device"]), width=200)
    header = next(line for line in by_device.splitlines() if "workload" in line)
    assert [cell.strip() for cell in header.strip("┃").split("┃")].count("device") == 1


# --- item 10: export makes its folder, and keeps the libraries' chatter off the terminal ---


def test_export_creates_a_new_folder_and_prints_only_its_own_table(tmp_path):
    pytest.importorskip("onnxruntime")
    pytest.importorskip("coremltools")
    out_dir = tmp_path / "new" / "nested"
    out = run_cli("export", "mlp", "--to", "onnx,coreml", "--out", str(out_dir))
    assert out.returncode == 0, out.stderr
    assert sorted(p.name for p in out_dir.iterdir()) == ["mlp.fp32.mlpackage", "mlp.fp32.onnx"]
    assert out.stderr == ""  # no "Failed to load _MLModelProxy", version warnings or bars
    assert "Failed to load" not in out.stdout and "%|" not in out.stdout
    assert "ok: max relative error" in out.stdout


def test_library_output_is_caught_below_python_and_shown_when_verbose(capfd, monkeypatch):
    monkeypatch.delenv("TQDM_DISABLE", raising=False)
    with library_output(verbose=False) as hidden:
        assert os.environ["TQDM_DISABLE"] == "1"  # tqdm draws no bar at all
        os.write(2, b"Failed to load _MLModelProxy\n")  # as C code prints it
        print("a progress bar", file=sys.stderr)
        print("a banner")
    assert hidden == ["Failed to load _MLModelProxy", "a progress bar", "a banner"]
    assert capfd.readouterr() == ("", "")
    with library_output(verbose=True) as shown:
        os.write(2, b"shown\n")
    assert shown == [] and capfd.readouterr().err == "shown\n"
    assert "TQDM_DISABLE" not in os.environ  # as it was


FAILING_EXPORT = textwrap.dedent(
    """
    import os
    import accelbench.exporters.onnx as onnx_exporter
    from accelbench.exporters.common import ExportReport

    def failing(model, stem):
        os.write(2, b"converter noise\\n")
        report = ExportReport("onnx", str(stem) + ".onnx")
        report.validation = {"ok": False, "error": "ONNX Runtime cannot run it: boom"}
        return report

    onnx_exporter.export_onnx = failing
    """
)


def test_a_failed_validation_stays_on_the_terminal(tmp_path):
    # the export runs in a worker, which loads plugins: this one fails ONNX's validation there
    plugin = tmp_path / "failing_export.py"
    plugin.write_text(FAILING_EXPORT)
    out = run_cli(
        "export", "mlp", "--to", "onnx", "--out", str(tmp_path / "x"),
        env={"ACCELBENCH_LEVERS": str(plugin)},
    )  # fmt: skip
    assert out.returncode == 1, out.stderr
    assert "FAILED: ONNX Runtime cannot run it: boom" in out.stdout
    assert "converter noise" not in out.stdout + out.stderr
    assert "the exporting libraries printed 1 line(s): --verbose shows them" in out.stderr


# --- item 11: commands that only read the store import no torch, and `results` is quick ---

READ_ONLY = textwrap.dedent(
    """
    import contextlib, io, json, sys
    from accelbench.cli.main import main

    codes = []
    for argv in json.loads(sys.argv[1]):
        with contextlib.redirect_stdout(io.StringIO()):
            codes.append(main(argv))
    heavy = ("torch", "transformers", "coremltools", "onnx", "onnxruntime", "numpy", "scipy")
    print(json.dumps({"codes": codes, "loaded": [m for m in heavy if m in sys.modules]}))
    """
)


def _loaded_by(*argvs: list[str]) -> dict:
    import json
    import subprocess

    out = subprocess.run(
        [sys.executable, "-c", READ_ONLY, json.dumps(argvs)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.fixture
def small_db(tmp_path):
    db = tmp_path / "r.db"
    with Store(db) as store:
        for device, seconds in (("cpu", 1.0), ("cuda:0", 0.1), ("cpu", 0.9)):
            store.save(_timed(device, "vm-1", seconds))
        base, run = _pair(330, 2, 3, 25)
        store.save(
            judge_against_baseline(_verify_run("cpu", run), _verify_run("cpu", base), Settings())
        )
    return str(db)


def test_reading_the_store_imports_no_torch(small_db):
    db = ["--db", small_db]
    found = _loaded_by(
        ["compare", *db],
        ["compare", "--by", "machine", *db],
        ["report", "--format", "markdown", *db],
        ["results", *db],
    )
    assert found["codes"] == [0, 0, 0, 0]
    assert not {"torch", "transformers", "coremltools", "onnx", "onnxruntime"} & set(
        found["loaded"]
    )
    # listing alone needs neither numpy nor scipy (most of a second between them)
    listing = _loaded_by(["results", *db], ["results", "--json", *db])
    assert listing == {"codes": [0, 0], "loaded": []}


def test_the_median_interval_needs_no_scipy_and_agrees_with_it():
    from scipy.stats import binom

    from accelbench.core.stats import _order_rank

    for n in range(1, 400):
        k = int(binom.ppf(0.025, n, 0.5))
        expected = k - 1 if binom.cdf(k, n, 0.5) > 0.025 else k
        assert _order_rank(n, 0.025) == expected, n


def test_the_results_table_lists_the_newest_fifty_unless_asked(tmp_path, capsys):
    db = tmp_path / "many.db"
    with Store(db) as store:
        for i in range(52):
            store.save(_timed("cpu", "vm-1", 1.0 + i / 100))
    assert main(["results", "--db", str(db)]) == 0
    table = capsys.readouterr().out
    ids = [line.split("│")[1].strip() for line in table.splitlines() if "│ seed-cnn" in line]
    assert ids == [str(i) for i in range(52, 2, -1)]  # the newest 50
    assert "the newest 50 are shown; more are stored: --limit N or --all lists them" in table
    assert main(["results", "--all", "--db", str(db)]) == 0
    assert capsys.readouterr().out.count("│ seed-cnn") == 52
    assert main(["results", "--limit", "51", "--db", str(db)]) == 0
    assert "more are stored" not in capsys.readouterr().out  # asked for: nothing to say


# --- item 14: results export --format csv ------------------------------------------------


def test_results_export_csv_reads_back_one_row_per_result(small_db, tmp_path):
    import csv
    import json

    with Store(small_db) as store:
        hostile = RunSpec("=HYPERLINK(evil)", "cpu", 8, 1)
        store.save(Result(spec=hostile, status="error", error="RuntimeError: boom, twice"))
        stored = store.results()[::-1]  # oldest first, as exported
    out = tmp_path / "all.csv"
    done = run_cli("results", "export", "--out", str(out), "--db", small_db, "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"exported": 5, "out": str(out)}
    with out.open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert [row["uid"] for row in rows] == [r.uid for r in stored]
    first, measured = rows[0], stored[0].measurement
    assert measured is not None
    assert (first["workload"], first["device"], first["batch_size"]) == ("seed-cnn", "cpu", "64")
    assert (first["mode"], first["precision"], first["backend"]) == ("train", "fp32", "torch")
    assert "channels_last" in first and "compile" in first  # every lever's value
    assert float(first["it_per_s_median"]) == measured.rate.median  # full precision
    assert float(first["it_per_s_ci95_low"]) == measured.rate.ci_low
    assert float(first["it_per_s_ci95_high"]) == measured.rate.ci_high
    assert int(first["samples"]) == 10 and first["status"] == "ok" and first["error"] == ""
    assert rows[3]["it_per_s_median"] == "" and rows[3]["samples"] == ""  # a verify run
    failed = rows[4]
    assert failed["error"] == "RuntimeError: boom, twice" and failed["status"] == "error"
    assert failed["workload"] == "'=HYPERLINK(evil)"  # no formula in a spreadsheet
    # --format json (or any other name) keeps the exchange file `results import` reads
    again = run_cli("results", "export", "--out", str(tmp_path / "x.txt"), "--db", small_db)
    assert again.returncode == 0 and json.loads((tmp_path / "x.txt").read_text())["results"]
    forced = tmp_path / "named.json"
    as_csv = ("results", "export", "--out", str(forced), "--format", "csv", "--db", small_db)
    assert run_cli(*as_csv).returncode == 0 and forced.read_text().startswith("id,uid,")
