"""`accelbench results`: list stored results; `results export` and `results import` move them
between machines."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from .options import Commands, add_filters, add_output_options, count, filters
from .output import (
    HISTORY_SCAN,
    db_path,
    emit_json,
    read_store,
    result_json,
    stored_history,
    width,
    with_history,
)

if TYPE_CHECKING:
    from ..core.result import Result
    from ..store.db import Store

TABLE_LIMIT = 50  # results the table lists when no --limit is given
EXPORT_FORMATS = ("json", "csv")
# what `results` does without an action; a mistyped action's refusal says it too
NO_ACTION = "with none, `accelbench results` lists the stored results"


def add_parser(commands: Commands) -> None:
    results = commands.add_parser(
        "results",
        help="list stored results (newest first), or export and import them",
        description="List stored results, newest first; `results export` and `results import` "
        "move them between machines without loss.",
    )
    shown = results.add_mutually_exclusive_group()
    shown.add_argument(
        "--limit",
        type=count(1),
        metavar="N",
        help=f"at most N results (default: the newest {TABLE_LIMIT} in the table, all with --json)",
    )
    shown.add_argument("--all", action="store_true", help="list every matching result")
    add_filters(results)
    add_output_options(results, progress=False)
    results.set_defaults(handler=handle)
    actions = results.add_subparsers(dest="action", metavar="ACTION", help=NO_ACTION)
    # Options an action repeats must not reset what was given before it (`results --db X
    # export`): absent there, they keep the value parsed by `results` itself.
    export = actions.add_parser(
        "export",
        help="write the chosen results to a JSON file (for `results import`) or a CSV file",
        argument_default=argparse.SUPPRESS,
    )
    export.add_argument("--out", required=True, metavar="FILE", help="the file to write")
    export.add_argument(
        "--format",
        choices=EXPORT_FORMATS,
        help="json: everything, raw samples included, for `results import` on another machine; "
        "csv: one row per result (the spec's fields, status, median it/s and its 95%% CI, "
        "samples/s, samples count, error, host), for pandas and spreadsheets (default: csv "
        "for a FILE ending in .csv, else json)",
    )
    add_filters(export)
    add_output_options(export, progress=False)
    export.set_defaults(handler=handle_export)
    import_ = actions.add_parser(
        "import",
        help="add the results of export files or of another SQLite store (idempotent)",
        argument_default=argparse.SUPPRESS,
    )
    import_.add_argument(
        "files", nargs="+", metavar="FILE", help="files from `results export`, or SQLite stores"
    )
    add_output_options(import_, progress=False)
    import_.set_defaults(handler=handle_import)


def handle(args: argparse.Namespace) -> int:
    from ..analysis.history import placements
    from ..render.console import results_table

    # A table of thousands of rows is slow to draw and no one reads it: by default the newest
    # TABLE_LIMIT, and one more is read to know whether there are others.
    default = not (args.json or args.all or args.limit)
    limit = TABLE_LIMIT if default else args.limit
    with read_store(args) as store:
        results = store.results(filters(args), limit=None if limit is None else limit + default)
        shown = results[:limit]
        stored, complete = stored_history(store, shown, HISTORY_SCAN)
        history = placements(shown, stored, complete=complete)
    if args.json:
        emit_json([with_history(result_json(r), r, history) for r in shown])
        return 0
    partial = "" if complete else f"the newest {HISTORY_SCAN:,} like them"
    print(results_table(shown, width=width(), history=history, read_from=partial), end="")
    if len(results) > TABLE_LIMIT and default:
        print(f"the newest {TABLE_LIMIT} are shown; more are stored: --limit N or --all lists them")
    return 0


def handle_export(args: argparse.Namespace) -> int:
    from ..store.results_file import write_export

    chosen = filters(args)
    out = Path(args.out)
    as_csv = getattr(args, "format", None) == "csv" or (
        getattr(args, "format", None) is None and out.suffix.lower() == ".csv"
    )
    with read_store(args) as store:
        results = store.results(chosen)[::-1]  # oldest first
    if as_csv:
        _write_csv(results, out)
    else:
        write_export(results, out)
    if args.json:
        emit_json({"exported": len(results), "out": args.out})
    else:
        print(f"exported {len(results)} result(s) to {args.out} (filters: {chosen.describe()})")
    return 0


def _write_csv(results: list[Result], path: Path) -> None:
    """The CSV whole or not at all (store/files)."""
    from ..render.results_csv import results_csv
    from ..store.files import write_file

    write_file(path, results_csv(results))


def handle_import(args: argparse.Namespace) -> int:
    from pathlib import Path

    from ..levers import check_levers
    from ..store.db import Store, read_results

    # Read and check every file before the store is touched.
    batches = [(path, read_results(Path(path), check_levers)) for path in args.files]
    added = []
    with Store(db_path(args)) as store:
        for path, results in batches:
            new = store.import_results(results)
            updated = _go_on(store, results) if new < len(results) else 0
            added.append((path, len(results), new, updated))
    if args.json:
        emit_json([{"file": p, "results": n, "added": a, "updated": u} for p, n, a, u in added])
    else:
        for path, total, new, updated in added:
            more = f", {updated} updated (more of their processes)" if updated else ""
            stored = total - new - updated
            print(f"{path}: {total} result(s), {new} new{more}, {stored} already stored")
    return 0


def _go_on(store: Store, results: list[Result]) -> int:
    """Results stored already that the import holds with more of their processes run (a run
    that went on while its server was away, kept in a file): replaced by the later state.
    How many."""
    from dataclasses import replace

    from ..store.db import Filters

    incoming = {r.uid: r for r in results}
    updated = 0
    for sweep in {r.sweep for r in results}:
        for stored in store.results(Filters(sweep=sweep)):
            later = incoming.get(stored.uid)
            if later is not None and _processes(later) > _processes(stored):
                store.save(replace(later, id=stored.id))
                updated += 1
    return updated


def _processes(result: Result) -> int:
    """How many of its processes a result holds, those that failed among them."""
    from ..analysis.facts import Rounds

    rounds = result.facts.get(Rounds)
    return 1 if rounds is None else len(rounds.passes) + len(rounds.failed)
