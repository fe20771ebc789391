"""The results store in an SQLite file, the embedded default: all of its SQL lives here.

SQLite through the standard library. The file is marked as ours with PRAGMA application_id and
carries its schema version in PRAGMA user_version, so a foreign or newer database is refused
before anything is written to it. Each result is saved in its own transaction: an interrupted
sweep keeps every result that finished.

A store opened to write checks, creates and migrates the schema under one write lock (`BEGIN
IMMEDIATE`), so two processes opening a new database at once cannot both create it; a store
opened to read opens the file read-only and never writes to it.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from ..core.peaks import PeakFigures
from ..core.result import Result, RunSpec, utc_now
from ..errors import StoreError
from .base import (
    COLUMNS,
    SCHEMA_VERSION,
    Filters,
    Store,
    backend,
    is_url,
    newest_calibrations,
    spec_key,
    to_row,
)

__all__ = ["APPLICATION_ID", "SQLiteStore", "is_sqlite_file"]

APPLICATION_ID = 0x41636342  # "AccB"
_SQLITE_MAGIC = b"SQLite format 3\x00"

# A new database is created at version 1 and migrated forward like any old one, so every
# migration is exercised on every new database.
_SCHEMA_V1 = """
CREATE TABLE results (
    id INTEGER PRIMARY KEY,
    created_at TEXT NOT NULL,
    workload TEXT NOT NULL,
    device TEXT NOT NULL,
    batch_size INTEGER NOT NULL,
    steps_per_block INTEGER NOT NULL,
    mode TEXT NOT NULL,
    precision TEXT NOT NULL,
    backend TEXT NOT NULL,
    status TEXT NOT NULL,
    error TEXT NOT NULL,
    samples TEXT NOT NULL,      -- JSON list: seconds per timed block
    warmup TEXT NOT NULL,       -- JSON list: seconds per warm-up block
    peak_memory INTEGER,
    peak_memory_meaning TEXT NOT NULL,
    environment TEXT NOT NULL   -- JSON object: the fingerprint
);
CREATE INDEX results_workload ON results (workload, device);
"""

_MIGRATIONS: dict[int, str] = {
    # 2: the benchmark matrix's options, derived metrics, and the sweep a result belongs to
    2: """
ALTER TABLE results ADD COLUMN channels_last INTEGER NOT NULL DEFAULT 0;
ALTER TABLE results ADD COLUMN compile TEXT NOT NULL DEFAULT '';
ALTER TABLE results ADD COLUMN cuda_graphs INTEGER NOT NULL DEFAULT 0;
ALTER TABLE results ADD COLUMN threads INTEGER NOT NULL DEFAULT 0;
ALTER TABLE results ADD COLUMN metrics TEXT NOT NULL DEFAULT '{}';
ALTER TABLE results ADD COLUMN sweep TEXT NOT NULL DEFAULT '';
CREATE INDEX results_sweep ON results (sweep);
""",
    # 3: blocks per timed sample; peak figures measured by `accelbench calibrate`
    3: """
ALTER TABLE results ADD COLUMN repeat INTEGER NOT NULL DEFAULT 1;
CREATE TABLE calibrations (
    id INTEGER PRIMARY KEY,
    created_at TEXT NOT NULL,
    host TEXT NOT NULL,
    device TEXT NOT NULL,
    device_model TEXT NOT NULL,
    flops TEXT NOT NULL,        -- JSON object: precision -> FLOP/s
    bandwidth REAL,             -- bytes/s
    source TEXT NOT NULL
);
""",
    # 4: a result's identity across databases, so importing the same file twice adds nothing
    4: """
ALTER TABLE results ADD COLUMN uid TEXT;
UPDATE results SET uid = lower(hex(randomblob(16))) WHERE uid IS NULL;
CREATE UNIQUE INDEX results_uid ON results (uid);
""",
    # 5: data-parallel runs: how many processes shared the work
    5: """
ALTER TABLE results ADD COLUMN processes INTEGER NOT NULL DEFAULT 1;
""",
    # 6: pruning ("" for none, else "KIND:AMOUNT"), an inference lever
    6: """
ALTER TABLE results ADD COLUMN pruning TEXT NOT NULL DEFAULT '';
""",
    # 7: every lever's value in one JSON object (those not at their defaults), so a new lever
    # needs no column; the six lever columns of versions 2 to 6 move into it and go.
    7: """
ALTER TABLE results ADD COLUMN levers TEXT NOT NULL DEFAULT '{}';
UPDATE results SET levers = (
    -- each value as JSON text, so booleans stay booleans and numbers numbers
    SELECT json_group_object(key, json(value)) FROM (
        SELECT 'channels_last' AS key, 'true' AS value WHERE channels_last
        UNION ALL SELECT 'compile', json_quote(compile) WHERE compile != ''
        UNION ALL SELECT 'cuda_graphs', 'true' WHERE cuda_graphs
        UNION ALL SELECT 'processes', CAST(processes AS TEXT) WHERE processes != 1
        UNION ALL SELECT 'pruning', json_quote(pruning) WHERE pruning != ''
        UNION ALL SELECT 'threads', CAST(threads AS TEXT) WHERE threads != 0
    )
);
ALTER TABLE results DROP COLUMN channels_last;
ALTER TABLE results DROP COLUMN compile;
ALTER TABLE results DROP COLUMN cuda_graphs;
ALTER TABLE results DROP COLUMN threads;
ALTER TABLE results DROP COLUMN processes;
ALTER TABLE results DROP COLUMN pruning;
""",
    # 8: mode "generate": the prompt's length and the tokens decoded (NULL for other modes)
    8: """
ALTER TABLE results ADD COLUMN prompt_length INTEGER;
ALTER TABLE results ADD COLUMN new_tokens INTEGER;
""",
    # 9: which samples came from which process: a JSON list of [samples, warm-ups] per process
    # ('[]': one process, as every result stored before)
    9: """
ALTER TABLE results ADD COLUMN rounds TEXT NOT NULL DEFAULT '[]';
""",
    # 10: a configuration a run is measuring, so that concurrent `run --resume`s of one sweep
    # split the work (store.claims)
    10: """
CREATE TABLE claims (
    sweep TEXT NOT NULL,
    spec TEXT NOT NULL,         -- the configuration, as its spec's JSON
    owner TEXT NOT NULL,        -- "host pid start": who measures it
    heartbeat REAL NOT NULL,    -- seconds since the epoch of the owner's last word
    PRIMARY KEY (sweep, spec)
);
""",
    # 11: a mode's own arguments in one JSON object (RunSpec.mode_args), so a mode with
    # options of its own needs no column; generate's two columns of version 8 move into it.
    11: """
ALTER TABLE results ADD COLUMN mode_args TEXT NOT NULL DEFAULT '{}';
UPDATE results SET mode_args = (
    SELECT json_group_object(key, value) FROM (
        SELECT 'new_tokens' AS key, new_tokens AS value WHERE new_tokens IS NOT NULL
        UNION ALL SELECT 'prompt_length', prompt_length WHERE prompt_length IS NOT NULL
    )
);
ALTER TABLE results DROP COLUMN prompt_length;
ALTER TABLE results DROP COLUMN new_tokens;
""",
}


@backend
class SQLiteStore(Store):
    """A results store in an SQLite file (any location that is not a server's URL)."""

    path: Path

    @classmethod
    def accepts(cls, location: str | Path) -> bool:
        return not is_url(location)

    def __init__(self, path: str | Path, create: bool = True) -> None:
        """Open the database at `path` to write: created when missing, migrated when older,
        and refused at once when it cannot be written (before anything is measured for it).

        With create=False, open it to read only: a missing file is an error, and nothing is
        written to the file, ever (an empty file reads as no results; an older schema is
        migrated in a copy in memory)."""
        self.path = Path(path)
        if not create and not self.path.exists():
            raise StoreError(
                f"no results database at {self.path}; run `accelbench run` first or pass --db PATH"
            )
        _check_file(self.path)
        self._conn = _open_to_write(self.path) if create else _open_to_read(self.path)
        super().__init__(path, create)

    def close(self) -> None:
        self._conn.close()

    def save(self, result: Result) -> Result:
        """Store one result in its own transaction; return it with its id. A result already
        stored here (its uid: a configuration whose next process has run) replaces its row."""
        row = to_row(result)
        try:
            with self._conn:
                self._conn.execute(_UPSERT, row)
                (found,) = self._conn.execute(
                    "SELECT id FROM results WHERE uid = ?", (result.uid,)
                ).fetchone()
        except sqlite3.Error as exc:
            raise StoreError(f"cannot write to {self.path}: {exc}") from None
        return replace(result, id=found)

    def import_results(self, results: Sequence[Result]) -> int:
        """Add the results this database lacks (by uid), all in one transaction; how many."""
        try:
            with self._conn:
                before = self._conn.total_changes
                for result in results:
                    self._conn.execute(_INSERT.format(verb="INSERT OR IGNORE"), to_row(result))
                return self._conn.total_changes - before
        except sqlite3.Error as exc:
            raise StoreError(f"cannot write to {self.path}: {exc}") from None

    def results(self, filters: Filters | None = None, limit: int | None = None) -> list[Result]:
        """Stored results matching `filters`, newest first."""
        where, params = _where(filters or Filters())
        sql = f"SELECT * FROM results {where} ORDER BY id DESC"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        try:
            rows = self._conn.execute(sql, params).fetchall()
        except sqlite3.Error as exc:
            raise StoreError(f"cannot read {self.path}: {exc}") from None
        return self._read_rows(rows)

    def save_calibration(
        self, device: str, device_model: str, host: str, peaks: PeakFigures
    ) -> None:
        """Store a device's measured peaks in its own transaction."""
        row = (
            utc_now(),
            host,
            device,
            device_model,
            json.dumps(dict(peaks.flops)),
            peaks.bandwidth,
            peaks.source,
        )
        try:
            with self._conn:
                self._conn.execute(
                    "INSERT INTO calibrations (created_at, host, device, device_model, flops, "
                    "bandwidth, source) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    row,
                )
        except sqlite3.Error as exc:
            raise StoreError(f"cannot write to {self.path}: {exc}") from None

    def calibrations(self) -> dict[str, PeakFigures]:
        """The newest calibration of each device model."""
        try:
            rows = self._conn.execute("SELECT * FROM calibrations ORDER BY id").fetchall()
        except sqlite3.Error as exc:
            raise StoreError(f"cannot read {self.path}: {exc}") from None
        return newest_calibrations(rows)

    def claim(self, sweep: str, spec: RunSpec, owner: str, stale: Callable[[str, float], bool]
              ) -> str | None:  # fmt: skip
        """Claim the configuration for `owner`: None when it is `owner`'s now (it was free,
        `owner`'s already, whose heartbeat this renews, or its holder is gone:
        `stale(holder, heartbeat)`), else the holder that keeps it. Concurrent `run --resume`s
        of one sweep claim each configuration before measuring it, so they split the work."""
        key = spec_key(spec)
        try:
            with self._conn:  # one transaction: the first to insert has it
                self._conn.execute(
                    "INSERT OR IGNORE INTO claims VALUES (?, ?, ?, ?)",
                    (sweep, key, owner, time.time()),
                )
                holder, beat = self._conn.execute(
                    "SELECT owner, heartbeat FROM claims WHERE sweep = ? AND spec = ?",
                    (sweep, key),
                ).fetchone()
                if holder == owner:  # ours: its heartbeat says we are still at it
                    self._conn.execute(
                        "UPDATE claims SET heartbeat = ? WHERE sweep = ? AND spec = ?",
                        (time.time(), sweep, key),
                    )
                    return None
                if not stale(holder, beat):
                    return str(holder)
                taken = self._conn.execute(
                    "UPDATE claims SET owner = ?, heartbeat = ? WHERE sweep = ? AND spec = ? "
                    "AND owner = ?",
                    (owner, time.time(), sweep, key, holder),
                )
                return None if taken.rowcount == 1 else str(holder)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot write to {self.path}: {exc}") from None

    def release(self, sweep: str, spec: RunSpec, owner: str) -> None:
        """Give up `owner`'s claim on the configuration (its processes are all stored)."""
        try:
            with self._conn:
                self._conn.execute(
                    "DELETE FROM claims WHERE sweep = ? AND spec = ? AND owner = ?",
                    (sweep, spec_key(spec), owner),
                )
        except sqlite3.Error as exc:
            raise StoreError(f"cannot write to {self.path}: {exc}") from None


def _where(filters: Filters) -> tuple[str, list[object]]:
    return filters.where("?", "json_extract(environment, '$.host')")


_INSERT = (
    f"{{verb}} INTO results ({', '.join(COLUMNS)}) VALUES ({', '.join(':' + c for c in COLUMNS)})"
)


_UPSERT = (
    _INSERT.format(verb="INSERT")
    + " ON CONFLICT (uid) DO UPDATE SET "
    + ", ".join(f"{c} = excluded.{c}" for c in COLUMNS if c != "uid")
)


_BUSY_TIMEOUT_S = 30.0  # how long one writer waits for another's lock before giving up


def _connect(target: str | Path, path: Path, uri: bool = False) -> sqlite3.Connection:
    try:
        conn = sqlite3.connect(target, timeout=_BUSY_TIMEOUT_S, uri=uri)
    except sqlite3.Error as exc:
        raise StoreError(f"cannot open {path} as the results database: {exc}") from None
    conn.row_factory = sqlite3.Row
    return conn


def _open_to_write(path: Path) -> sqlite3.Connection:
    return _prepared(_connect(path, path), path)


def _open_to_read(path: Path) -> sqlite3.Connection:
    """The database opened read-only; an empty or older one is set up in a copy in memory, and
    so is one a killed writer left with a hot journal beside it (`_rolled_back`)."""
    conn = _connect(f"{path.resolve().as_uri()}?mode=ro", path, uri=True)
    try:
        if _version(conn, path) == SCHEMA_VERSION:
            return conn
        memory = _connect(":memory:", path)
        conn.backup(memory)
    except StoreError:
        conn.close()
        if not _hot_journal(path):
            raise
        memory = _rolled_back(path)
    except BaseException:
        conn.close()
        raise
    else:
        conn.close()
    return _prepared(memory, path)


def _hot_journal(path: Path) -> bool:
    """Whether a writer that died mid-transaction left its rollback journal: a reader must
    roll the database back before reading it, which a read-only one cannot."""
    journal = path.with_name(path.name + "-journal")
    return journal.is_file() and journal.stat().st_size > 0


def _rolled_back(path: Path) -> sqlite3.Connection:
    """The committed database, in memory: the file and its journal are copied to a scratch
    folder, where SQLite rolls the copy back; the original is never written."""
    import shutil
    import tempfile

    with tempfile.TemporaryDirectory(prefix="accelbench-read-") as scratch:
        copy = Path(scratch) / "results.db"
        shutil.copyfile(path, copy)
        journal = path.with_name(path.name + "-journal")
        shutil.copyfile(journal, copy.with_name(copy.name + "-journal"))
        rolled = _connect(copy, path)
        try:
            memory = _connect(":memory:", path)
            rolled.backup(memory)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot read {path}: {exc}") from None
        finally:
            rolled.close()
    return memory


def _prepared(conn: sqlite3.Connection, path: Path) -> sqlite3.Connection:
    """`conn` once its schema is set up; closed when it cannot be."""
    try:
        _set_up(conn, path)
    except BaseException:
        conn.close()
        raise
    return conn


def _set_up(conn: sqlite3.Connection, path: Path) -> None:
    """Check the database is ours, then create or migrate its schema, all under one write lock:
    a second process opening it at the same time waits, then finds it set up."""
    conn.isolation_level = None  # transactions by hand: Python's own would commit mid-way
    try:
        conn.execute("BEGIN IMMEDIATE")
        version = _version(conn, path)
        for statement in _statements(_setup_script(version)):
            conn.execute(statement)
        # A write even when nothing is to change, so a read-only file is refused now
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        conn.execute("COMMIT" if version < SCHEMA_VERSION else "ROLLBACK")
    except sqlite3.Error as exc:
        raise StoreError(f"cannot write to {path}: {exc}") from None
    conn.isolation_level = "DEFERRED"  # Python's default again: a `with conn` is a transaction


def _version(conn: sqlite3.Connection, path: Path) -> int:
    """The schema version of our database, 0 for an empty one; StoreError for another's."""
    try:
        app_id = conn.execute("PRAGMA application_id").fetchone()[0]
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    except sqlite3.Error as exc:
        raise StoreError(f"cannot open {path} as the results database: {exc}") from None
    if app_id == 0 and not tables:
        return 0
    if app_id != APPLICATION_ID:
        held = ", ".join(tables) or "no tables"
        raise StoreError(
            f"{path} is not an accelbench database (it holds: {held}); choose another --db path"
        )
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"{path} was written by a newer accelbench (schema {version}; this one "
            f"reads up to {SCHEMA_VERSION}); upgrade accelbench"
        )
    return int(version)


def _setup_script(version: int) -> str:
    """The SQL that takes a database from `version` (0: empty) to SCHEMA_VERSION."""
    script = "" if version else f"{_SCHEMA_V1} PRAGMA application_id = {APPLICATION_ID};"
    for target in range(max(version, 1) + 1, SCHEMA_VERSION + 1):
        script += _MIGRATIONS[target]
    return script


def _statements(script: str) -> list[str]:
    """The script's statements one by one (sqlite3 executes one at a time outside
    executescript, which would commit the open transaction first)."""
    statements, start = [], 0
    for end, char in enumerate(script, start=1):
        if char == ";" and sqlite3.complete_statement(script[start:end]):
            statements.append(script[start:end])
            start = end
    return statements


def is_sqlite_file(path: Path) -> bool:
    """Whether `path` is a readable file that starts as an SQLite database does."""
    try:
        with path.open("rb") as f:
            return f.read(len(_SQLITE_MAGIC)) == _SQLITE_MAGIC
    except OSError:
        return False  # the caller reads it as an export file, and says what is wrong


def _check_file(path: Path) -> None:
    if path.is_dir():
        raise StoreError(f"cannot use {path} as the results database: it is a directory")
    if path.exists() and not path.is_file():  # a FIFO would hang the reader, a device worse
        raise StoreError(f"cannot use {path} as the results database: it is not a regular file")
    if not path.parent.is_dir():
        raise StoreError(f"cannot create {path}: directory {path.parent} does not exist")
    if not path.exists():
        return
    try:
        with path.open("rb") as f:
            header = f.read(len(_SQLITE_MAGIC))
    except OSError as exc:
        raise StoreError(f"cannot read {path}: {exc.strerror}") from None
    if header and header != _SQLITE_MAGIC:
        raise StoreError(
            f"{path} is not an accelbench database (not an SQLite file); choose another --db path"
        )
