"""Issue 37 item 11: the README's first screen is the install-and-run command (the main job's
and the tests'), not prose, and every path it cites in backticks is in the repository."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
FIRST_SCREEN = 24  # lines a terminal or a repository page shows before scrolling

MAIN_JOB = "pip install -c constraints.txt -e . && accelbench run"
TESTS = "pip install -c constraints.txt -e '.[test]' && ruff check && mypy && pytest"


def test_the_first_screen_holds_both_set_up_commands():
    first = "\n".join(README.splitlines()[:FIRST_SCREEN])
    assert MAIN_JOB in first and TESTS in first


def test_every_path_cited_is_in_the_repository():
    cited = re.findall(r"`((?:[\w.-]+/)+[\w.-]*)`", README)
    paths = [c for c in cited if not c.startswith(("postgresql:", "http")) and "..." not in c]
    assert paths, "no path cited: the pattern no longer matches the README"
    missing = [p for p in paths if not (ROOT / p).exists()]
    assert not missing, f"README.md cites paths a clone does not have: {missing}"
