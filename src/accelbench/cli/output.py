"""The edge where commands meet the terminal and the disk: the table width, JSON on stdout,
the database path, files written, and the exit code of a measuring command."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import UsageError
from ..workflows import facts  # noqa: F401  (every fact registered, so stored rows are checked)

if TYPE_CHECKING:
    from pathlib import Path

    from ..analysis.history import Placement
    from ..core.result import Result
    from ..store.db import Store

__all__ = [
    "FAILED",
    "OutputClosed",
    "db_path",
    "emit_json",
    "exit_code",
    "guarded_stdout",
    "read_store",
    "result_json",
    "width",
    "write",
]

FAILED = frozenset({"oom", "error", "timeout"})  # statuses that make a measuring command exit 1


class OutputClosed(UsageError):
    """Standard output cannot be written: closed (`>&-`), or its device full (`> /dev/full`)."""


class _Guarded:
    """Standard output that says, as an OutputClosed, why a write failed; `stream` None when
    the command was started with it closed. A reader that stopped reading (a broken pipe) is
    left to main's quiet ending."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        return int(self._call("write", _encodable(text, getattr(self._stream, "encoding", None))))

    def flush(self) -> None:
        if self._stream is not None:  # nothing written to a closed one, nothing to flush
            self._call("flush")

    def isatty(self) -> bool:
        return self._stream is not None and bool(self._stream.isatty())

    def _call(self, name: str, *args: Any) -> Any:
        if self._stream is None:
            raise OutputClosed("cannot write to standard output: it is closed")
        try:
            return getattr(self._stream, name)(*args)
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise OutputClosed(f"cannot write to standard output: {exc.strerror}") from None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _encodable(text: str, encoding: str | None) -> str:
    """`text` as a stream of `encoding` can take it (`PYTHONIOENCODING=ascii`, a C locale):
    each character it lacks written as its escape (`mod\\xe8le`), rather than the command
    ending in a UnicodeEncodeError. Tables are drawn for the encoding (render/text)."""
    try:
        text.encode(encoding or "utf-8")
    except UnicodeEncodeError:
        return text.encode(encoding or "utf-8", "backslashreplace").decode(encoding or "utf-8")
    except LookupError:  # an encoding Python does not know: the stream's own to refuse
        pass
    return text


@contextlib.contextmanager
def guarded_stdout() -> Iterator[None]:
    """sys.stdout guarded for the command's duration (`_Guarded`). Started with file
    descriptor 1 closed, the next file opened would take it, and whatever a worker or the
    model's code printed would land there (in the database): /dev/null holds it instead."""
    original = sys.stdout
    if original is None:
        _hold(1)
    sys.stdout = _Guarded(original)
    try:
        yield
    finally:
        sys.stdout = original


def _hold(fd: int) -> None:
    """Open /dev/null on `fd` if nothing is open there."""
    try:
        os.fstat(fd)
    except OSError:
        held = os.open(os.devnull, os.O_WRONLY)
        if held != fd:  # a lower one was closed too: this one is not ours to fill
            os.close(held)


def width() -> int:
    # Piped output is read by people later (README, issues): do not wrap it at 80 columns.
    return shutil.get_terminal_size((160, 24)).columns if sys.stdout.isatty() else 160


def emit_json(payload: Any) -> None:
    print(json.dumps(payload, indent=2))


@contextlib.contextmanager
def read_store(args: argparse.Namespace) -> Iterator[Store]:
    """The database opened to read; afterwards, each damaged row the reads met, in one line on
    stderr (it was left out; every other row was read)."""
    from ..render.text import inert
    from ..store.db import Store

    with Store(db_path(args), create=False) as store:
        yield store
    for text in store.damaged.values():  # a damaged row's text is shown, never acted on
        print(f"accelbench: warning: {inert(text)}: left out", file=sys.stderr)


def db_path(args: argparse.Namespace) -> str | Path:
    """The store --db names (a file path, or a postgresql:// URL as text), else the default."""
    from ..store.db import as_location, default_db_path

    return as_location(args.db) if args.db else default_db_path()


def write(path: str, data: str | bytes) -> None:
    """A file the user named, written safely (store/files): whole or not at all."""
    from pathlib import Path

    from ..store.files import write_file

    write_file(Path(path), data)


def print_command_wall(args: argparse.Namespace) -> None:
    """The console's last line: the command's whole wall time, from its process's start, so
    the per-process breakdown above is not taken for all of it. Said only where the OS tells,
    and where the process is the command's own (main() called by another program is not)."""
    from ..devices.host import seconds_since_start

    seconds = seconds_since_start() if getattr(args, "whole_process", False) else None
    if seconds is not None:
        print(f"wall time from this command's start to this line: {seconds:.1f} s")


def exit_code(statuses: Iterable[str]) -> int:
    """1 when a configuration ran out of memory, failed or timed out; else 0."""
    return 1 if any(status in FAILED for status in statuses) else 0


def result_json(result: Result) -> dict[str, Any]:
    """A result as the --json outputs show it: everything, with its configuration's label,
    every lever's value in its spec, and its caveats (analysis/trust)."""
    from dataclasses import asdict

    from ..analysis.facts import partial
    from ..analysis.trust import trust_of
    from ..levers import label, spec_json

    caveats = [asdict(c) for c in trust_of(result).caveats]
    unfinished = partial(result)  # measured in fewer processes than planned: --resume goes on
    return {
        **result.to_dict(label=label(result.spec)),
        "spec": spec_json(result.spec),
        "partial": unfinished is not None,
        **({"planned_processes": unfinished[1]} if unfinished else {}),
        "caveats": caveats,
    }


# Stored results `run` and `results` read for where each run landed against its history:
# reading all of 100,000 again would take the listing from a second to minutes (the gate,
# `compare --candidate RUN`, reads them all).
HISTORY_SCAN = 500


def stored_history(
    store: Store, results: Sequence[Result], scan: int | None = None
) -> tuple[list[Result], bool]:
    """The stored runs that could be `results`' history (analysis/history), in one query
    narrowed by what they all share, the rest filtered in Python; at most the newest `scan`
    of them (a listing of 100,000 results must not read them all twice), and whether that was
    all of them."""
    from ..analysis.history import narrowing
    from ..store.db import Filters

    if not results:
        return [], True
    found = store.results(Filters(status="ok", **narrowing(results)), limit=scan)
    return found, scan is None or len(found) < scan


def with_history(
    record: dict[str, Any], result: Result, history: Mapping[str, Placement]
) -> dict[str, Any]:
    """A result's --json record with where it landed against its earlier runs (`history`, by
    uid; null where the store holds no earlier run of its configuration on its machine)."""
    placed = history.get(result.uid)
    return {**record, "history": None if placed is None else placed.to_dict()}
