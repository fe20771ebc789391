"""Writing a file the user named (an export, a report, a chart), so that nothing they had is
lost or turned into something else.

- A regular file (or a new one) is replaced whole or not at all: the data goes to a temporary
  file in the same folder, under a short name (one beside a 250-byte name would be too long),
  is flushed to the disk, takes the old file's mode (a new one the umask's), and is renamed
  over it. On any failure the temporary is removed and the old file is as it was.
- A symbolic link is followed: its target is what gets written, the link stays a link.
- A device, a FIFO, a terminal or a stream named under /dev or /proc (`/dev/stdout`, even
  redirected to a file; `/dev/full`) is written directly, never replaced by a regular file.
- A folder, or a folder that does not exist, is refused. Every failure is one line.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
import tempfile
from pathlib import Path

from ..errors import StoreError

__all__ = ["write_file"]

_TEMPORARY = ".accelbench-"  # a short prefix: the temporary name must fit where the file's did


def write_file(path: Path, data: str | bytes) -> None:
    """Write `data` to `path` as the module says; StoreError in one line on failure."""
    payload = data.encode("utf-8") if isinstance(data, str) else data
    try:
        found = _stat(path)  # through links
        if found is not None and stat.S_ISDIR(found.st_mode):
            raise StoreError(f"cannot write {path}: it is a directory; give a file name")
        if found is not None and (not stat.S_ISREG(found.st_mode) or _a_stream(path)):
            _write_in_place(path, payload)  # a device, a FIFO, a terminal: written, not replaced
        else:
            _replace(_regular(path), payload)
    except OSError as exc:
        raise StoreError(f"cannot write {path}: {exc.strerror or exc}") from None


def _stat(path: Path) -> os.stat_result | None:
    try:
        return os.stat(path)
    except FileNotFoundError:
        return None


def _a_stream(path: Path) -> bool:
    """/dev/stdout and its kin name a process's open stream, even where that is a regular file
    (a shell's `> out.json`): it is written through, not replaced behind the shell's back."""
    return str(path.absolute()).startswith(("/dev/", "/proc/"))


def _own_stream(path: Path) -> int | None:
    """1 or 2 when `path` is this process's stdout or stderr (`/dev/stdout`), else None."""
    try:
        named = os.stat(path)
    except OSError:
        return None
    for fd in (1, 2):
        with contextlib.suppress(OSError):
            mine = os.fstat(fd)
            if (mine.st_dev, mine.st_ino) == (named.st_dev, named.st_ino):
                return fd
    return None


def _regular(path: Path) -> Path:
    """The regular file to replace: where the path leads through its links (a link's target is
    what gets written), in a folder that exists."""
    target = Path(os.path.realpath(path))
    if not target.parent.is_dir():
        raise StoreError(f"cannot write {path}: directory {target.parent} does not exist")
    return target


def _write_in_place(path: Path, payload: bytes) -> None:
    """Write to what is not a regular file. This process's own stdout or stderr is written
    through its descriptor, after what is buffered there, so the two keep their order. A FIFO
    no one reads would block forever: it is opened without waiting, and refused (ENXIO) when
    there is no reader."""
    own = _own_stream(path)
    if own is not None:
        sys.stdout.flush()
        sys.stderr.flush()
        view = memoryview(payload)
        while view:  # a pipe may take less than all at once
            view = view[os.write(own, view) :]
        return
    fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
    try:
        os.set_blocking(fd, True)
        with open(fd, "wb", closefd=False) as f:
            f.write(payload)
            f.flush()
    finally:
        os.close(fd)


def _replace(target: Path, payload: bytes) -> None:
    mode = _mode_for(target)
    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=_TEMPORARY)
    try:
        with os.fdopen(handle, "wb") as f:
            f.write(payload)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def _mode_for(target: Path) -> int:
    """The old file's permissions, or what a new file gets under the umask."""
    with contextlib.suppress(FileNotFoundError):
        return stat.S_IMODE(target.stat().st_mode)
    return 0o666 & ~_umask()


def _umask() -> int:
    """The process's umask: Linux says it in /proc; elsewhere it is read by setting it (and
    back at once)."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    current = os.umask(0o022)
    os.umask(current)
    return current
