"""The edge where commands meet the terminal and the disk: the table width, JSON on stdout,
the database path, files written, and the exit code of a measuring command."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ..errors import UsageError

if TYPE_CHECKING:
    from pathlib import Path

    from ..core.result import Result

__all__ = ["FAILED", "db_path", "emit_json", "exit_code", "result_json", "width", "write"]

FAILED = frozenset({"oom", "error", "timeout"})  # statuses that make a measuring command exit 1


def width() -> int:
    # Piped output is read by people later (README, issues): do not wrap it at 80 columns.
    return shutil.get_terminal_size((160, 24)).columns if sys.stdout.isatty() else 160


def emit_json(payload: Any) -> None:
    print(json.dumps(payload, indent=2))


def db_path(args: argparse.Namespace) -> Path:
    from pathlib import Path

    from ..store.db import default_db_path

    return Path(args.db) if args.db else default_db_path()


def write(path: str, data: str | bytes) -> None:
    from pathlib import Path

    try:
        if isinstance(data, bytes):
            Path(path).write_bytes(data)
        else:
            Path(path).write_text(data)
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror}") from None


def exit_code(statuses: Iterable[str]) -> int:
    """1 when a configuration ran out of memory, failed or timed out; else 0."""
    return 1 if any(status in FAILED for status in statuses) else 0


def result_json(result: Result) -> dict[str, Any]:
    """A result as the --json outputs show it: everything, with its configuration's label,
    every lever's value in its spec, and its caveats (analysis/trust)."""
    from dataclasses import asdict

    from ..analysis.trust import trust_of
    from ..levers import label, spec_json

    caveats = [asdict(c) for c in trust_of(result).caveats]
    return {
        **result.to_dict(label=label(result.spec)),
        "spec": spec_json(result.spec),
        "caveats": caveats,
    }
