"""The lever registry: each lever is one object, and everything else is generated from it.
A toy lever from a file of the test suite, loaded through ACCELBENCH_LEVERS with nothing else
edited, appears in `run --help`, a sweep's configurations and labels, `compare --by`,
export/import and the optimize ladder."""

import json
import os
from pathlib import Path

import pytest

from accelbench.core.result import RunSpec
from accelbench.levers import all_levers, check_levers, find_lever, label, spec_with
from tests.conftest import TESTS, run_cli

TOY = {"ACCELBENCH_LEVERS": str(TESTS / "toy_lever.py")}
RUN = ["--devices", "cpu", "--modes", "infer", "--blocks", "2", "--warmup", "1", "--no-verdict"]


@pytest.fixture(scope="module")
def toy_db(tmp_path_factory):
    db = tmp_path_factory.mktemp("toy") / "toy.db"
    out = run_cli(
        "run", "mlp", *RUN, "--toy-levels", "off,half", "--db", str(db), "--json", env=TOY
    )
    assert out.returncode == 0, out.stderr
    return db, json.loads(out.stdout)


def test_the_toy_lever_has_an_option_in_run_help():
    out = run_cli("run", "--help", env=TOY)
    assert "--toy-levels" in out.stdout and "a toy lever" in out.stdout
    assert "--toy-levels" not in run_cli("run", "--help").stdout  # only where it is loaded


def test_the_toy_lever_multiplies_the_sweep_and_labels_its_configurations(toy_db):
    _, report = toy_db
    results = report["results"]
    assert [r["spec"]["toy"] for r in results] == ["", "half"]
    assert [r["label"] for r in results] == ["infer fp32 b100", "infer fp32 b100 toy:half"]
    assert results[1]["metrics"]["toy"] == {"level": "half"}  # it was applied in the worker


def test_compare_by_the_toy_lever(toy_db):
    db, _ = toy_db
    out = run_cli("compare", "--by", "toy", "--db", str(db), "--json", env=TOY)
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)
    assert [row["value"] for row in rows] == ["half", "off"]
    assert rows[0]["speedup"] is not None and rows[1]["speedup"] is None  # off is the baseline


def test_export_and_import_carry_the_toy_lever(toy_db, tmp_path):
    db, _ = toy_db
    path, other = tmp_path / "toy.json", tmp_path / "other.db"
    assert (
        run_cli("results", "export", "--out", str(path), "--db", str(db), env=TOY).returncode == 0
    )
    specs = [r["spec"]["levers"] for r in json.loads(path.read_text())["results"]]
    assert {"toy": "half"} in specs
    refused = run_cli("results", "import", str(path), "--db", str(other))  # toy not loaded
    assert refused.returncode == 2 and "unknown lever 'toy'" in refused.stderr
    assert not other.exists() or "toy" not in run_cli("results", "--db", str(other)).stdout
    taken = run_cli("results", "import", str(path), "--db", str(other), env=TOY)
    assert taken.returncode == 0, taken.stderr
    listed = json.loads(run_cli("results", "--db", str(other), "--json", env=TOY).stdout)
    assert "half" in [r["spec"]["toy"] for r in listed]


def test_the_optimize_ladder_tries_the_toy_lever(tmp_path):
    out = run_cli(
        "optimize", "mlp", "--device", "cpu", "--mode", "infer", "--levers", "toy",
        "--blocks", "2", "--db", str(tmp_path / "o.db"), "--json", env=TOY,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    variants = [v["variant"] for v in json.loads(out.stdout)["variants"]]
    assert variants == ["fp32 eager", "toy half"]


def test_a_broken_plugin_is_one_line_and_exit_2(tmp_path):
    broken = tmp_path / "broken.py"
    broken.write_text("raise RuntimeError('no')\n")
    out = run_cli("run", "--help", env={"ACCELBENCH_LEVERS": str(broken)})
    assert out.returncode == 2 and "cannot load the plugin" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def test_a_plugin_that_ends_the_program_is_one_line_and_exit_2(tmp_path):
    quits = tmp_path / "quits.py"
    quits.write_text("import sys\nsys.exit(0)\n")
    out = run_cli("results", "--db", str(tmp_path / "none.db"),
                  env={"ACCELBENCH_LEVERS": str(quits)})  # fmt: skip
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.strip().endswith("its code called sys.exit(0)")


def test_a_spec_is_equal_however_its_levers_were_set():
    base = RunSpec("seed-cnn", "cpu", 64, 20)
    a = spec_with(base, channels_last=True, compile="default")
    b = spec_with(spec_with(base, compile="default"), channels_last=True)
    assert a == b and a.levers == (("channels_last", True), ("compile", "default"))
    assert spec_with(a, channels_last=False) == spec_with(base, compile="default")  # default: gone
    assert label(a) == "train fp32 b64 channels_last compile"


def test_stored_lever_values_are_checked():
    check_levers(spec_with(RunSpec("m", "cpu", 1, 1), threads=4))
    for levers, message in [
        ((("colour", "red"),), "unknown lever 'colour'"),
        ((("threads", "four"),), "threads must be a whole number"),
        ((("pruning", "channels:2"),), "between 0 and 1"),
        ((("compile", "fast"),), "invalid value 'fast'"),
        ((("channels_last", False),), "at its default"),
    ]:
        with pytest.raises(ValueError, match=message):
            check_levers(RunSpec("m", "cpu", 1, 1, levers=levers))
    with pytest.raises(KeyError, match="registered"):
        find_lever("colour")


def test_a_lever_needs_a_name_and_an_option_of_its_own():
    from accelbench.levers import Lever, register

    class Twice(Lever):
        name, option = "threads", "--more-threads"

    class Clash(Lever):
        name, option = "clash", "--threads"

    class Silent(Lever):
        name = "silent"

    for cls, message in ((Twice, "registered twice"), (Clash, "option of its own"),
                         (Silent, "option of its own")):  # fmt: skip
        with pytest.raises(ValueError, match=message):
            register(cls)
    assert "clash" not in [lever.name for lever in all_levers()]


def _installed_toy(tmp_path: Path) -> dict[str, str]:
    """The toy lever as an installed package declares it: a module in site's path and a
    .dist-info folder whose entry_points.txt names it in the group accelbench.plugins."""
    site = tmp_path / "site"
    info = site / "toy_plugin-0.1.dist-info"
    info.mkdir(parents=True)
    (site / "toy_plugin.py").write_text((TESTS / "toy_lever.py").read_text())
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[accelbench.plugins]\ntoy = toy_plugin\n")
    return {"PYTHONPATH": os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))}


def test_an_installed_package_s_lever_loads_in_the_command_and_its_workers(tmp_path):
    env = _installed_toy(tmp_path)
    assert "--toy-levels" in run_cli("run", "--help", env=env).stdout
    db = tmp_path / "toy.db"
    out = run_cli("run", "mlp", *RUN, "--toy-levels", "half", "--db", str(db), "--json", env=env)
    assert out.returncode == 0, out.stderr
    (result,) = json.loads(out.stdout)["results"]
    assert result["metrics"]["toy"] == {"level": "half"}  # applied in the worker


def test_a_broken_installed_plugin_is_one_line_naming_its_entry_point(tmp_path):
    env = _installed_toy(tmp_path)
    (tmp_path / "site" / "toy_plugin.py").write_text("raise RuntimeError('no')\n")
    out = run_cli("results", "--db", str(tmp_path / "none.db"), env=env)
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1
    assert "entry point 'toy' in accelbench.plugins" in out.stderr and "RuntimeError" in out.stderr
