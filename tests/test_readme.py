"""Issue 37 item 11: the README's first screen is the install-and-run command (the main job's
and the tests'), not prose, and every path it cites in backticks is in the repository."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
PYPROJECT = (ROOT / "pyproject.toml").read_text()
FIRST_SCREEN = 24  # lines a terminal or a repository page shows before scrolling

MAIN_JOB = "pip install -c constraints.txt -e . && accelbench run"
TEST_COMMAND = "ruff check && mypy && pytest -n 2 -m 'not alone' && pytest -m alone"
TESTS = f"pip install -c constraints.txt -e '.[test]' && {TEST_COMMAND}"


def test_the_first_screen_holds_both_set_up_commands():
    first = "\n".join(README.splitlines()[:FIRST_SCREEN])
    assert MAIN_JOB in first and TESTS in first


def test_ci_runs_the_readmes_install_and_test_command():
    ci = (ROOT / ".ci" / "run").read_text()
    assert "pip install -q --no-cache-dir -c constraints.txt -e '.[test]'" in ci
    commands = [line for line in ci.splitlines() if line.startswith("ruff check")]
    assert commands == [TEST_COMMAND], commands


def test_the_alone_marker_is_registered_and_used():
    """`-m alone` selects by a registered marker (an unregistered one would select nothing
    and pass), and some tests carry it, so the second pytest runs something."""
    assert re.search(r'^markers = \[\n(?:.*\n)*?\s+"alone: ', PYPROJECT, re.MULTILINE)
    tests = [p for p in (ROOT / "tests").rglob("test_*.py") if p != Path(__file__).resolve()]
    assert [p for p in tests if "pytest.mark.alone" in p.read_text()]


def test_every_path_cited_is_in_the_repository():
    cited = re.findall(r"`((?:[\w.-]+/)+[\w.-]*)`", README)
    paths = [c for c in cited if not c.startswith(("postgresql:", "http")) and "..." not in c]
    assert paths, "no path cited: the pattern no longer matches the README"
    missing = [p for p in paths if not (ROOT / p).exists()]
    assert not missing, f"README.md cites paths a clone does not have: {missing}"
