"""The mode registry: each mode is one object, and everything else asks it. A toy mode from a
file of the test suite, loaded through ACCELBENCH_LEVERS with nothing else edited, appears in
`run --help`, is measured by `run`, and shows in `results`, `compare` and export/import; a
stored result of a mode not loaded still lists, and `run` refuses an unknown mode."""

import ast
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
    out = run_cli("run", "mlp", *RUN, "--modes", "infer,toy", "--db", str(db), "--json", env=TOY)
    assert out.returncode == 0, out.stderr
    return db, json.loads(out.stdout)


def test_the_toy_mode_is_a_choice_of_run_help():
    out = run_cli("run", "--help", env=TOY)
    assert "toy: a toy mode" in out.stdout
    assert "toy: a toy mode" not in run_cli("run", "--help").stdout  # only where it is loaded


def test_run_measures_the_toy_mode_with_its_own_step(toy_db):
    _, report = toy_db
    results = {r["spec"]["mode"]: r for r in report["results"]}
    assert results["toy"]["status"] == "ok"
    assert results["toy"]["metrics"]["toy_mode"] == {"passes": 2}  # its step ran, in the worker
    assert results["toy"]["label"] == "toy fp32 b100"


def test_results_and_compare_show_the_toy_mode(toy_db):
    db, _ = toy_db
    listed = run_cli("results", "--db", str(db), env=TOY)
    assert listed.returncode == 0 and "toy samples/s" in listed.stdout, listed.stderr
    out = run_cli(
        "compare", "--by", "mode", "--baseline-value", "infer", "--db", str(db), "--json", env=TOY
    )
    assert out.returncode == 0, out.stderr
    rows = {row["value"]: row for row in json.loads(out.stdout)}
    assert set(rows) == {"infer", "toy"} and rows["toy"]["speedup"] is not None


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
    assert result["metrics"]["toy_mode"] == {"passes": 2}  # its step, in the worker


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
