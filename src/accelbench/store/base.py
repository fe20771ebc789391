"""The results store's one interface, whatever holds it: `Store(location)` opens the backend
the location names (a file path: SQLite; a `postgresql://` URL: a PostgreSQL server), and the
row format every backend shares. The SQL lives in each backend's own module."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path
from types import TracebackType
from typing import Any, ClassVar

from ..core.modes import check_stored_args
from ..core.peaks import PeakFigures
from ..core.result import Result, RunSpec
from ..core.vocab import PRECISIONS, STATUSES, Precision, Status
from ..errors import StoreError, UsageError

__all__ = [
    "DB_VARIABLE",
    "SCHEMA_VERSION",
    "Filters",
    "Store",
    "default_location",
    "from_row",
    "is_url",
    "to_row",
]

SCHEMA_VERSION = 11  # the tables' shape, the same on every backend
DB_VARIABLE = "ACCELBENCH_DB"  # the store to use when no --db is given
URL_SCHEMES = ("postgresql://", "postgres://")


def is_url(location: str | Path) -> bool:
    """Whether `location` names a database server rather than a file."""
    return isinstance(location, str) and location.lower().startswith(URL_SCHEMES)


def default_location() -> str | Path:
    """$ACCELBENCH_DB (a path or a URL), else ./accelbench.db."""
    return as_location(os.environ.get(DB_VARIABLE) or "accelbench.db")


def as_location(text: str | Path) -> str | Path:
    """A URL stays text; anything else is a file path."""
    return text if is_url(text) else Path(text)


class Store:
    """An open results store. Use as a context manager, or call close().

    `Store(location)` opens it to write: created when missing, migrated when older, refused at
    once when it cannot be written (before anything is measured for it). `Store(location,
    create=False)` opens it to read only: nothing is ever written (an empty store reads as no
    results). `location` is a file path (SQLite, the embedded default) or a
    `postgresql://user:password@host:port/name` URL (a PostgreSQL server)."""

    # The backends, most specific first; each module registers its class (`backend`).
    _backends: ClassVar[list[type[Store]]] = []
    # Where it is, for messages: a file path, or a URL with its password masked
    path: Path | str

    def __new__(cls, location: str | Path, create: bool = True) -> Store:
        if cls is not Store:
            return super().__new__(cls)
        for backend in cls._backends:
            if backend.accepts(location):
                return super().__new__(backend)
        raise StoreError(f"no results store can open {location!r}")  # no backend registered

    def __init__(self, location: str | Path, create: bool = True) -> None:
        # rows found damaged by the reads so far, by id: the commands say each in one line
        self.damaged: dict[int, str] = {}

    @classmethod
    def accepts(cls, location: str | Path) -> bool:
        """Whether this backend opens `location`."""
        return False

    @property
    def location(self) -> str:
        """Where the store is, safe to print (a URL's password is masked)."""
        return str(self.path)

    def __enter__(self) -> Store:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        raise NotImplementedError

    def save(self, result: Result) -> Result:
        """Store one result in its own transaction; return it with its id. A result already
        stored here (its uid: a configuration whose next process has run) replaces its row."""
        raise NotImplementedError

    def import_results(self, results: Sequence[Result]) -> int:
        """Add the results this store lacks (by uid), all in one transaction; how many."""
        raise NotImplementedError

    def results(self, filters: Filters | None = None, limit: int | None = None) -> list[Result]:
        """Stored results matching `filters`, newest first."""
        raise NotImplementedError

    def save_calibration(
        self, device: str, device_model: str, host: str, peaks: PeakFigures
    ) -> None:
        """Store a device's measured peaks in its own transaction."""
        raise NotImplementedError

    def calibrations(self) -> dict[str, PeakFigures]:
        """The newest calibration of each device model."""
        raise NotImplementedError

    def claim(self, sweep: str, spec: RunSpec, owner: str, stale: Callable[[str, float], bool]
              ) -> str | None:  # fmt: skip
        """Claim the configuration for `owner`: None when it is `owner`'s now (it was free,
        `owner`'s already, whose heartbeat this renews, or its holder is gone:
        `stale(holder, heartbeat)`), else the holder that keeps it. Concurrent `run --resume`s
        of one sweep claim each configuration before measuring it, so they split the work."""
        raise NotImplementedError

    def release(self, sweep: str, spec: RunSpec, owner: str) -> None:
        """Give up `owner`'s claim on the configuration (its processes are all stored)."""
        raise NotImplementedError

    def _read_rows(self, rows: Sequence[Mapping[str, Any]]) -> list[Result]:
        """Rows as Results; a damaged row is named in `damaged` and left out, and every
        other one still reads."""
        found = []
        for row in rows:
            try:
                found.append(from_row(row))
            except (ValueError, TypeError, KeyError, OverflowError) as exc:
                self.damaged.setdefault(row["id"], f"result #{row['id']} is damaged ({exc})")
        return found


def backend(cls: type[Store]) -> type[Store]:
    """Register a backend class (a decorator); the last registered is asked first."""
    Store._backends.insert(0, cls)
    return cls


def spec_key(spec: RunSpec) -> str:
    """A configuration as one text: the claims table's key."""
    return json.dumps(spec.to_dict(), sort_keys=True)


@dataclass(frozen=True, kw_only=True)
class Filters:
    """Which results: each field set narrows the selection (all must match)."""

    workload: str | None = None
    device: str | None = None
    host: str | None = None
    mode: str | None = None
    precision: Precision | None = None
    backend: str | None = None
    sweep: str | None = None
    status: Status | None = None
    id: int | None = None
    # Every run of the sweep whose options hash to this key (engine/sweep: `Sweep.id`): the
    # key itself (stored before each run had an id of its own) or the key, "-", a run's suffix.
    runs_of: str | None = None

    def __post_init__(self) -> None:
        """A word outside a closed vocabulary would select nothing, silently: say so."""
        for name, value, valid in (
            ("precision", self.precision, PRECISIONS),
            ("status", self.status, STATUSES),
        ):
            if value is not None and value not in valid:
                raise UsageError(f"unknown {name} {value!r}; valid: {', '.join(valid)}")

    def columns(self) -> dict[str, object]:
        """The columns a result's row must hold, by name; the host (the environment's) is
        not a column, and each backend reads it its own way."""
        chosen: dict[str, object] = {} if self.id is None else {"id": self.id}
        for name in ("workload", "device", "mode", "precision", "backend", "sweep", "status"):
            value = getattr(self, name)
            if value:
                chosen[name] = value
        return chosen

    def where(self, mark: str, host: str) -> tuple[str, list[object]]:
        """The WHERE clause and its parameters in a backend's dialect: `mark` its parameter
        placeholder, `host` its expression for the environment's host."""
        chosen = self.columns()
        clauses, params = [f"{name} = {mark}" for name in chosen], list(chosen.values())
        if self.host:
            clauses.append(f"{host} = {mark}")
            params.append(self.host)
        if self.runs_of:
            clauses.append(f"(sweep = {mark} OR sweep LIKE {mark})")
            params += [self.runs_of, f"{self.runs_of}-%"]
        return ("WHERE " + " AND ".join(clauses) if clauses else ""), params

    def describe(self) -> str:
        chosen = [
            f"{f.name}={getattr(self, f.name)}" for f in fields(self) if getattr(self, f.name)
        ]
        return ", ".join(chosen) or "none"


SPEC_COLUMNS = [f.name for f in fields(RunSpec)]  # "levers", "mode_args": JSON objects
COLUMNS = [
    "uid",
    "created_at",
    *SPEC_COLUMNS,
    "status",
    "error",
    "samples",
    "warmup",
    "repeat",
    "rounds",
    "peak_memory",
    "peak_memory_meaning",
    "environment",
    "metrics",
    "sweep",
]
JSON_COLUMNS = ("samples", "warmup", "rounds", "environment", "metrics", "levers", "mode_args")


def newest_calibrations(rows: Sequence[Mapping[str, Any]]) -> dict[str, PeakFigures]:
    """The newest calibration of each device model, from the calibrations' rows oldest first."""
    return {
        row["device_model"]: PeakFigures(
            flops=json.loads(row["flops"]), bandwidth=row["bandwidth"], source=row["source"]
        )
        for row in rows  # later rows overwrite earlier ones: the newest wins
    }


def to_row(result: Result) -> dict[str, Any]:
    """A result as a row: its COLUMNS by name, the JSON ones as text."""
    record = result.to_record()
    # a field left out is NULL; no mode arguments, an empty object
    spec = dict.fromkeys(SPEC_COLUMNS) | {"mode_args": {}} | record.pop("spec")
    row = {**record, **spec}
    for name in JSON_COLUMNS:
        row[name] = json.dumps(row[name], sort_keys=True)
    return row


def from_row(row: Mapping[str, Any]) -> Result:
    """A stored row as a Result, checked as an imported record is (`Result.from_record`):
    ValueError names the first thing wrong with a damaged row."""
    record = {name: row[name] for name in COLUMNS if name not in JSON_COLUMNS}
    for name in JSON_COLUMNS:
        try:
            record[name] = json.loads(row[name])
        except (TypeError, ValueError):
            raise ValueError(f"its {name} is not JSON: {str(row[name])[:40]!r}") from None
    spec = {name: record.pop(name) for name in SPEC_COLUMNS}
    result = Result.from_record({**record, "spec": spec})
    check_stored_args(result.spec)
    return replace(result, id=row["id"])
