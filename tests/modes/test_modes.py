"""The mode registry: each mode is one object, and everything else asks it. A toy mode from a
file of the test suite, loaded through ACCELBENCH_LEVERS with nothing else edited, appears in
`run --help` with its own option, is measured by `run` (its option multiplying its
configurations, its value read in the worker, its own measurement), and shows in `results`,
`--json`, CSV, the report, `compare` and export/import; a stored result of a mode not loaded
still lists, and `run` refuses an unknown mode or an option of a mode not asked for."""

import ast
import csv
import io
import json
import os
from pathlib import Path

import pytest

from accelbench.core.modes import Mode, all_modes, find_mode, mode_of, register_mode
from accelbench.core.result import RunSpec
from accelbench.errors import UsageError
from tests.conftest import TESTS, run_cli

TOY = {"ACCELBENCH_LEVERS": str(TESTS / "toy_mode.py")}
RUN = ["--devices", "cpu", "--blocks", "2", "--warmup", "1", "--no-verdict"]


@pytest.fixture(scope="module")
def toy_db(tmp_path_factory):
    db = tmp_path_factory.mktemp("toy_mode") / "toy.db"
    toy = ["--modes", "infer,toy", "--toy-passes", "1,3"]
    out = run_cli("run", "mlp", *RUN, *toy, "--db", str(db), "--json", env=TOY)
    assert out.returncode == 0, out.stderr
    return db, json.loads(out.stdout)


def test_the_toy_mode_and_its_option_are_in_run_help():
    out = run_cli("run", "--help", env=TOY)
    assert "toy: a toy mode" in out.stdout
    assert "--modes toy: forward passes per step (default: 2)" in " ".join(out.stdout.split())
    plain = run_cli("run", "--help").stdout  # only where it is loaded
    assert "toy: a toy mode" not in plain and "--toy-passes" not in plain


def test_run_measures_the_toy_mode_at_each_value_of_its_option(toy_db):
    _, report = toy_db
    toys = [r for r in report["results"] if r["spec"]["mode"] == "toy"]
    assert [r["status"] for r in toys] == ["ok", "ok"]
    assert [r["label"] for r in toys] == ["toy fp32 b100 passes=1", "toy fp32 b100 passes=3"]
    assert [r["spec"]["passes"] for r in toys] == [1, 3]  # --json: a spec field by name
    # the value reached the worker's step, and the mode's own measurement ran there
    assert [r["metrics"]["toy_mode"] for r in toys] == [
        {"passes": 1, "measured_by": "toy"},
        {"passes": 3, "measured_by": "toy"},
    ]
    (infer,) = [r for r in report["results"] if r["spec"]["mode"] == "infer"]
    assert "passes" not in infer["spec"] and infer["label"] == "infer fp32 b100"


def test_the_toy_mode_s_option_is_stored_and_shown(toy_db, tmp_path):
    db, _ = toy_db
    listed = json.loads(run_cli("results", "--db", str(db), "--json", env=TOY).stdout)
    assert sorted(r["spec"].get("passes", 0) for r in listed) == [0, 1, 3]
    out = tmp_path / "r.csv"
    exported = run_cli("results", "export", "--out", str(out), "--db", str(db), env=TOY)
    assert exported.returncode == 0, exported.stderr
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    assert sorted(row["passes"] for row in rows) == ["", "1", "3"]
    report = run_cli("report", "--format", "markdown", "--db", str(db), env=TOY)
    assert report.returncode == 0, report.stderr
    assert "passes=1" in report.stdout and "passes=3" in report.stdout


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--modes", "infer", "--toy-passes", "3"], "--toy-passes applies to --modes toy only"),
        (["--modes", "toy", "--toy-passes", "0"], "must be a whole number from 1 to"),
    ],
)
def test_a_bad_value_or_an_option_of_a_mode_not_run_is_one_line(args, said, tmp_path):
    db = tmp_path / "x.db"
    out = run_cli("run", "mlp", *RUN, *args, "--db", str(db), env=TOY)
    assert out.returncode == 2 and said in out.stderr, out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and not db.exists()


def test_results_and_compare_show_the_toy_mode(toy_db):
    db, _ = toy_db
    listed = run_cli("results", "--db", str(db), env=TOY)
    assert listed.returncode == 0 and "toy samples/s" in listed.stdout, listed.stderr
    # its option's values are configurations of one mode: compared against the fastest
    out = run_cli("compare", "--by", "configuration", "--db", str(db), "--json", env=TOY)
    assert out.returncode == 0, out.stderr
    rows = {row["value"]: row for row in json.loads(out.stdout) if row["value"].startswith("toy")}
    assert set(rows) == {"toy fp32 b100 passes=1", "toy fp32 b100 passes=3"}
    # one group: the fastest is its baseline, the other has a speedup against it
    assert sorted(row["speedup"] is None for row in rows.values()) == [False, True]


def test_export_and_import_carry_the_toy_mode_loaded_or_not(toy_db, tmp_path):
    db, _ = toy_db
    path, other = tmp_path / "toy.json", tmp_path / "other.db"
    exported = run_cli("results", "export", "--out", str(path), "--db", str(db), env=TOY)
    assert exported.returncode == 0, exported.stderr
    assert "toy" in [r["spec"]["mode"] for r in json.loads(path.read_text())["results"]]
    # a stored result's mode need not be loaded: it imports, lists, compares and exports
    taken = run_cli("results", "import", str(path), "--db", str(other))
    assert taken.returncode == 0, taken.stderr
    listed = json.loads(run_cli("results", "--db", str(other), "--json").stdout)
    assert "toy" in [r["spec"]["mode"] for r in listed]
    assert "toy" in run_cli("results", "--db", str(other), "--mode", "toy").stdout
    compared = run_cli("compare", "--by", "mode", "--baseline-value", "infer", "--db", str(other))
    assert compared.returncode == 0 and "toy" in compared.stdout, compared.stderr
    again = run_cli("results", "export", "--out", str(tmp_path / "again.json"), "--db", str(other))
    assert again.returncode == 0, again.stderr


def test_an_installed_package_s_mode_loads_in_the_command_and_its_workers(tmp_path):
    """The entry-point group accelbench.plugins loads a mode as it loads a lever."""
    site = tmp_path / "site"
    info = site / "toy_mode_plugin-0.1.dist-info"
    info.mkdir(parents=True)
    (site / "toy_mode_plugin.py").write_text((TESTS / "toy_mode.py").read_text())
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-mode-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[accelbench.plugins]\ntoy = toy_mode_plugin\n")
    env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))}
    assert "toy: a toy mode" in run_cli("run", "--help", env=env).stdout
    db = tmp_path / "toy.db"
    out = run_cli("run", "mlp", *RUN, "--modes", "toy", "--db", str(db), "--json", env=env)
    assert out.returncode == 0, out.stderr
    (result,) = json.loads(out.stdout)["results"]
    assert result["metrics"]["toy_mode"]["passes"] == 2  # its step, in the worker


def test_run_refuses_a_mode_not_registered_in_one_line(tmp_path):
    out = run_cli("run", "mlp", *RUN, "--modes", "toy", "--db", str(tmp_path / "x.db"))
    assert out.returncode == 2
    assert "invalid value 'toy'; valid: train, infer, generate" in out.stderr
    with pytest.raises(UsageError, match="unknown mode 'nope'; valid: train, infer, generate"):
        find_mode("nope")


def test_a_mode_not_registered_has_a_neutral_stand_in():
    stand_in = mode_of(RunSpec("mlp", "cpu", 8, 2, mode="plugin-gone"))
    assert stand_in.name == "plugin-gone" and not stand_in.rate_unit
    assert not (stand_in.trains or stand_in.decodes or stand_in.forward_only or stand_in.probes)


def test_a_mode_needs_a_name_of_its_own():
    class Nameless(Mode):
        pass

    class Again(Mode):
        name = "train"

    for cls, why in ((Nameless, "has no name"), (Again, "registered already")):
        with pytest.raises(ValueError, match=why):
            register_mode(cls)


@pytest.mark.parametrize("mode", all_modes(), ids=lambda m: m.name)
def test_every_built_in_mode_says_what_it_is(mode):
    assert mode.help and mode_of(mode.name) is mode
    assert not (mode.trains and mode.forward_only)  # a training step is not one forward
    assert mode.decodes == bool(mode.rate_unit)  # a generation's rate counts its tokens


def _compares_a_mode(node: ast.AST) -> bool:
    """A comparison with a mode's name: `spec.mode == ...`, or `... == "train"`."""
    if not isinstance(node, ast.Compare):
        return False
    sides = [node.left, *node.comparators]
    named = [
        s
        for s in sides
        if isinstance(s, ast.Constant) and s.value in ("train", "infer", "generate")
    ]
    return named != [] or any(isinstance(s, ast.Attribute) and s.attr == "mode" for s in sides)


def test_no_module_outside_the_modes_compares_a_mode_with_a_name():
    package = Path(__file__).resolve().parents[2] / "src" / "accelbench"
    found = [
        f"{path.relative_to(package)}:{node.lineno}"
        for path in package.rglob("*.py")
        if path.parent.name != "modes" and path.name != "modes.py"
        for node in ast.walk(ast.parse(path.read_text()))
        if _compares_a_mode(node)
    ]
    assert found == []
