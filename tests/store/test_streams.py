"""Standard output full (`> /dev/full`) or closed (`>&-`): one line on stderr, a non-zero exit
and no traceback, and what `run` measured is still stored (cli/output.guarded_stdout)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from accelbench.store.db import Store
from tests.conftest import copy_of

FAST = ["mlp", "--devices", "cpu", "--blocks", "2", "--rounds", "1", "--no-verdict", "--quiet"]


def _cli(args: list[str], stdout: str) -> subprocess.CompletedProcess[str]:
    """The CLI with its standard output full (/dev/full) or closed."""
    redirect = "> /dev/full" if stdout == "full" else ">&-"
    command = " ".join([sys.executable, "-m", "accelbench", *args])
    env = {k: v for k, v in os.environ.items() if k != "ACCELBENCH_DB"}
    return subprocess.run(
        ["sh", "-c", f"exec {command} {redirect}"],
        stdout=None if stdout == "full" else subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        timeout=300,
    )


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full here")
@pytest.mark.parametrize("stdout", ["full", "closed"])
def test_a_full_or_closed_stdout_is_one_line_and_the_measurement_is_kept(tmp_path, stdout):
    db = str(tmp_path / "r.db")
    out = _cli(["run", *FAST, "--db", db], stdout)
    assert out.returncode == 2, out.stderr
    (line,) = out.stderr.strip().splitlines()
    assert line.startswith("accelbench: error: cannot write to standard output: ")
    assert line.endswith("results already stored are kept")
    with Store(db, create=False) as store:
        assert [r.status for r in store.results()] == ["ok"]
    for command in (["results"], ["compare"], ["report", "--format", "markdown"]):
        read = _cli([*command, "--db", db], stdout)
        assert read.returncode == 2 and len(read.stderr.strip().splitlines()) == 1, read.stderr
        assert "Traceback" not in read.stderr


def test_a_reader_that_stops_reading_still_ends_quietly(tmp_path, measured_db):
    db = str(copy_of(measured_db, tmp_path))  # one result of mlp, measured by `run`
    piped = subprocess.run(
        ["sh", "-c", f"{sys.executable} -m accelbench results --json --db {db} | head -c 1"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert piped.stdout == "[" and piped.stderr == ""
