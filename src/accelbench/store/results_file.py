"""Moving results between machines: a JSON export file, and importing it elsewhere.

The file carries its own format name and version, and each result its uid, so importing the same
file twice adds nothing. A file is checked whole before anything is written: a truncated or
hand-broken file, or one from a newer accelbench, is refused in one line and the database is left
as it was.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..core.result import RECORD_FIELDS, Result, RunSpec, utc_now
from ..core.version import __version__
from ..errors import StoreError
from .files import write_file

__all__ = ["EXPORT_FORMAT", "EXPORT_VERSION", "read_export", "write_export"]

EXPORT_FORMAT = "accelbench-results"
# 2: results carry fields added since 1 (processes, pruning); version 1 files still read, the
# missing fields taking their defaults. An older accelbench then says "newer", not "damaged".
# 3: a spec's lever values sit in one object, "levers" (those not at their defaults); versions 1
# and 2 kept six of them as fields of the spec, and still read.
# 4: a result's "rounds" says which samples came from which process; versions 1 to 3 have
# none, and read as one process each.
# 5: a spec's mode arguments sit in one object, "mode_args" (a mode's own options were fields
# of the spec); version 4 and older still read (core/result moves those into mode_args).
EXPORT_VERSION = 5
# The levers versions 1 and 2 kept as spec fields, with their defaults then.
_LEGACY_LEVERS: dict[str, str | int | bool] = {
    "channels_last": False,
    "compile": "",
    "cuda_graphs": False,
    "threads": 0,
    "processes": 1,
    "pruning": "",
}


def write_export(results: Sequence[Result], path: Path) -> None:
    """Write `results` to `path` whole or not at all (store/files).

    Give them oldest first, so that importing keeps their order.
    """
    payload = {
        "format": EXPORT_FORMAT,
        "version": EXPORT_VERSION,
        "accelbench": __version__,
        "exported_at": utc_now(),
        "results": [r.to_record() for r in results],
    }
    write_file(path, json.dumps(payload, indent=1))


def read_export(path: Path, check_spec: Callable[[RunSpec], None] | None = None) -> list[Result]:
    """Every result in an export file, or StoreError naming what is wrong with the file.

    `check_spec` (the lever registry's check) raises ValueError for a spec it cannot take."""
    payload = _load(path)
    if not isinstance(payload, dict) or payload.get("format") != EXPORT_FORMAT:
        raise StoreError(f'{path} is not an accelbench export (no "format": "{EXPORT_FORMAT}")')
    version = _version(path, payload.get("version"))
    records = payload.get("results")
    if not isinstance(records, list):
        raise StoreError(f"{path} has no list of results")
    results = []
    for number, record in enumerate(records, start=1):
        try:
            _check_fields(record)
            if version < 3:
                record = _upgrade(record)
            result = Result.from_record(record)
            if check_spec is not None:
                check_spec(result.spec)
            results.append(result)
        except (ValueError, TypeError) as exc:
            raise StoreError(
                f"{path}: result {number} of {len(records)} is damaged: {exc}"
            ) from None
    return results


def _version(path: Path, version: Any) -> int:
    """The file's export version, or StoreError: a whole number (true is no version, nor is
    "4") that some accelbench wrote, and not newer than this one reads."""
    if isinstance(version, bool) or not isinstance(version, int):
        raise StoreError(
            f'{path} has "version": {json.dumps(version)}, not a whole number; accelbench '
            f"exports are versions 1 to {EXPORT_VERSION}"
        )
    if version > EXPORT_VERSION:
        raise StoreError(
            f"{path} is export version {version}, newer than this accelbench reads "
            f"({EXPORT_VERSION}); upgrade accelbench"
        )
    if version < 1:
        raise StoreError(
            f"{path} is export version {version}, which no accelbench writes; accelbench "
            f"exports are versions 1 to {EXPORT_VERSION}"
        )
    return version


def _check_fields(record: Any) -> None:
    """ValueError naming the fields of `record` that a result does not have: the store could
    not keep them, and importing must not drop what the file says without a word."""
    unknown = sorted(set(record) - RECORD_FIELDS) if isinstance(record, dict) else []
    if unknown:
        named = ", ".join(repr(name) for name in unknown)
        raise ValueError(
            f"it has fields accelbench results do not have ({named}), which importing would "
            "drop; a newer accelbench's file? upgrade accelbench"
        )


def _upgrade(record: Any) -> Any:
    """A version 1 or 2 record with its lever fields moved into the spec's "levers"."""
    if not isinstance(record, dict) or not isinstance(record.get("spec"), dict):
        return record  # from_record names what is wrong
    spec, levers = dict(record["spec"]), {}
    for name, default in _LEGACY_LEVERS.items():
        if name not in spec:
            continue
        value = spec.pop(name)
        if isinstance(value, bool) is not isinstance(default, bool) or not isinstance(
            value, type(default)
        ):
            raise ValueError(f"spec {name!r} has the wrong type ({type(value).__name__})")
        if value != default:
            levers[name] = value
    return {**record, "spec": {**spec, "levers": levers}}


def _load(path: Path) -> Any:
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise StoreError(f"cannot read {path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise StoreError(f"cannot read {path}: {exc}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise StoreError(
            f"{path} is truncated or not JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})"
        ) from None
    except RecursionError:
        raise StoreError(f"{path} nests its JSON too deeply to be an accelbench export") from None
    except ValueError as exc:  # an integer of more digits than Python converts
        raise StoreError(f"{path} is not an accelbench export: {exc}") from None
