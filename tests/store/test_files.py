"""Files the user names (store/files): replaced whole or not at all with their mode kept, a
link's target written, a device or FIFO written and never replaced, every failure one line with
the old file intact and no temporary left."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from accelbench.errors import StoreError
from accelbench.store import files
from accelbench.store.files import write_file
from tests.conftest import copy_of, run_cli


def _leftovers(folder: Path) -> list[str]:
    return [p.name for p in folder.iterdir() if p.name.startswith(".accelbench-")]


def test_a_new_file_takes_the_umasks_mode_and_an_old_one_keeps_its_own(tmp_path):
    new = tmp_path / "new.json"
    write_file(new, "{}")
    assert new.read_text() == "{}"
    assert stat.S_IMODE(new.stat().st_mode) == 0o666 & ~files._umask()
    old = tmp_path / "old.json"
    old.write_text("before")
    old.chmod(0o640)
    write_file(old, b"after")
    assert old.read_bytes() == b"after" and stat.S_IMODE(old.stat().st_mode) == 0o640
    assert _leftovers(tmp_path) == []


def test_a_link_is_followed_and_stays_a_link(tmp_path):
    target = tmp_path / "target.json"
    target.write_text("before")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    write_file(link, "after")
    assert link.is_symlink() and target.read_text() == "after"


def test_a_name_as_long_as_the_filesystem_takes_is_written(tmp_path):
    long = tmp_path / ("r" * 245 + ".json")  # 250 bytes: a temporary beside it must be shorter
    write_file(long, "{}")
    assert long.read_text() == "{}"


def test_a_failure_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    old = tmp_path / "old.json"
    old.write_text("before")

    def refuse(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(files.os, "replace", refuse)
    with pytest.raises(StoreError, match="cannot write .*old.json: No space left on device"):
        write_file(old, "after")
    assert old.read_text() == "before" and _leftovers(tmp_path) == []


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full here")
def test_a_device_is_written_and_never_replaced():
    with pytest.raises(StoreError, match="cannot write /dev/full: No space left on device"):
        write_file(Path("/dev/full"), "x")
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)
    write_file(Path("/dev/null"), "x")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_a_fifo_is_written_to_its_reader_and_refused_without_one(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(StoreError, match="cannot write .*pipe: No such device or address"):
        write_file(fifo, "nobody reads")
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()))
    reader.start()
    for _ in range(100):  # until the reader has the FIFO open
        try:
            write_file(fifo, "hello")
            break
        except StoreError:
            threading.Event().wait(0.02)
    reader.join(timeout=10)
    assert got == ["hello"] and stat.S_ISFIFO(fifo.stat().st_mode)


def test_a_folder_or_a_missing_folder_is_refused(tmp_path):
    with pytest.raises(StoreError, match="is a directory"):
        write_file(tmp_path, "x")
    with pytest.raises(StoreError, match="does not exist"):
        write_file(tmp_path / "nowhere" / "r.json", "x")


def _small_tmpfs(folder: Path) -> bool:
    folder.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(folder)], capture_output=True
    )
    return mounted.returncode == 0


def test_a_full_disk_leaves_the_old_report_as_it_was(tmp_path):
    disk = tmp_path / "disk"
    if not _small_tmpfs(disk):
        pytest.skip("cannot mount a small tmpfs here (not root, or no mount)")
    try:
        old = disk / "report.md"
        old.write_text("the old report")
        with pytest.raises(StoreError, match="No space left on device"):
            write_file(old, "x" * 200_000)  # more than the 64 KiB the disk holds
        assert old.read_text() == "the old report" and _leftovers(disk) == []
    finally:
        subprocess.run(["umount", str(disk)], capture_output=True)


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full here")
def test_the_cli_says_a_failed_export_in_one_line(tmp_path, measured_db):
    db = copy_of(measured_db, tmp_path)  # one result of mlp, measured by `run`
    out = run_cli("results", "export", "--out", "/dev/full", "--db", str(db))
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.strip() == (
        "accelbench: error: cannot write /dev/full: No space left on device"
    )
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)


def test_dev_stdout_is_written_through_even_when_the_shell_sent_it_to_a_file(tmp_path, measured_db):
    db = copy_of(measured_db, tmp_path)  # one result of mlp, measured by `run`
    out = tmp_path / "out.json"
    shell = f"{sys.executable} -m accelbench results export --out /dev/stdout --db {db} > {out}"
    assert subprocess.run(["sh", "-c", shell], timeout=120).returncode == 0
    text = out.read_text()
    end = text.rindex("}") + 1  # the export, then the command's own line after it
    assert json.loads(text[:end])["format"] == "accelbench-results"
    assert text[end:] == "exported 1 result(s) to /dev/stdout (filters: none)\n"
