"""The results store, whatever holds it: `Store(location)` opens an SQLite file (the embedded
default) or a PostgreSQL server (`postgresql://...`), behind one interface (store/base). Importing
this module registers both backends; the public names live here."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ..core.result import Result, RunSpec
from ..errors import StoreError
from . import postgres, sqlite  # noqa: F401  (each registers its backend with Store)
from .base import DB_VARIABLE, SCHEMA_VERSION, Filters, Store, as_location, default_location, is_url

__all__ = [
    "DB_VARIABLE",
    "SCHEMA_VERSION",
    "Filters",
    "Store",
    "as_location",
    "default_db_path",
    "is_url",
    "read_results",
]


def default_db_path() -> str | Path:
    """$ACCELBENCH_DB (a path or a postgresql:// URL), else ./accelbench.db."""
    return default_location()


def read_results(path: Path, check_spec: Callable[[RunSpec], None] | None = None) -> list[Result]:
    """Every result of an export file (`results export`) or of an SQLite store, oldest first,
    each with its uid, checked whole: StoreError in one line for the first thing wrong."""
    from .results_file import read_export

    if not sqlite.is_sqlite_file(path):
        return read_export(path, check_spec)
    with Store(path, create=False) as old:
        found = old.results()[::-1]
    for text in old.damaged.values():
        raise StoreError(f"{path}: {text}; nothing was imported")
    for result in found:
        try:
            if check_spec is not None:
                check_spec(result.spec)
        except ValueError as exc:
            raise StoreError(f"{path}: result #{result.id} cannot be imported: {exc}") from None
    return found
