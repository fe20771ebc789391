"""One way to say a package is missing: `errors.require` names the extra to install."""

from __future__ import annotations

import sys

import pytest

from accelbench.core.result import Result, RunSpec
from accelbench.core.stats import Measurement
from accelbench.errors import EXTRAS, MissingDependency, UsageError, require
from accelbench.store.db import Store
from tests.conftest import REPO, run_cli


def test_a_missing_module_gives_exactly_one_line_naming_the_extra():
    with pytest.raises(MissingDependency) as caught:
        require("accelbench_no_such_module", "report", "charts")
    assert str(caught.value) == (
        "accelbench_no_such_module is needed for charts: pip install 'accelbench[report]'"
    )
    assert isinstance(caught.value, UsageError)  # so the CLI exits 2 with that line


def test_the_package_name_is_used_where_it_differs_from_the_module(monkeypatch):
    monkeypatch.setitem(sys.modules, "sklearn", None)  # importing it now fails
    with pytest.raises(
        MissingDependency,
        match=r"^scikit-learn is needed for verify: pip install 'accelbench\[verify\]'$",
    ):
        require("sklearn.datasets", "verify", "verify", package="scikit-learn")


def test_a_present_module_is_returned():
    assert require("json", "report", "nothing").__name__ == "json"


def test_an_installed_package_that_fails_to_import_is_not_called_missing(tmp_path, monkeypatch):
    (tmp_path / "half_installed.py").write_text("import accelbench_absent_dependency\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(MissingDependency) as caught:
        require("half_installed", "export", "exporting")
    message = str(caught.value)
    assert message.startswith("half_installed is installed but does not import")
    assert "accelbench_absent_dependency" in message and "\n" not in message


def test_an_unknown_extra_is_a_programming_error():
    with pytest.raises(ValueError, match="unknown extra 'reports'"):
        require("json", "reports", "charts")


def test_the_extras_are_pyprojects():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11 or later
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert set(EXTRAS) == set(project["optional-dependencies"]) - {"test"}


def test_the_cli_says_it_in_one_line_with_exit_code_2(tmp_path):
    # a matplotlib that is not there: its name resolves to a package that refuses to import
    fake = tmp_path / "matplotlib"
    fake.mkdir()
    (fake / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'matplotlib'\", name='matplotlib')\n"
    )
    path = f"{tmp_path}:{REPO / 'src'}"
    db = tmp_path / "r.db"
    with Store(db) as store:
        store.save(Result(spec=RunSpec("mlp", "cpu", 8, 1), status="ok", measurement=_six()))
    out = run_cli(
        "plot", "--out", str(tmp_path / "c.png"), "--db", str(db), env={"PYTHONPATH": path}
    )
    assert out.returncode == 2, out.stderr
    assert out.stderr == (
        "accelbench: error: matplotlib is needed for charts: pip install 'accelbench[report]'\n"
    )


def _six() -> Measurement:
    return Measurement((0.1,) * 6)
