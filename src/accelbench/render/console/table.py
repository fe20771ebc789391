"""A rich table built and rendered to plain text, the way every console renderer shows one."""

from __future__ import annotations

import io
from collections.abc import Iterable, Sequence

from rich.console import Console
from rich.table import Table

__all__ = ["new_table", "render_table", "table_text"]


def new_table(title: str, headers: Sequence[str], left_columns: int | None = None) -> Table:
    """A table with these headers; past `left_columns` (numbers) they align right."""
    table = Table(title=title, title_justify="left")
    for i, header in enumerate(headers):
        right = left_columns is not None and i >= left_columns
        table.add_column(header, justify="right" if right else "left")
    return table


def render_table(table: Table, notes: Sequence[str] = (), width: int = 120) -> str:
    """The table, then each note on its own line, as text without colour."""
    buffer = io.StringIO()
    console = Console(file=buffer, width=width, no_color=True, highlight=False, soft_wrap=False)
    console.print(table)
    for note in notes:
        console.print(note, soft_wrap=True)
    # rich pads lines to the console width; trailing blanks only get in the way of a reader
    return "\n".join(line.rstrip() for line in buffer.getvalue().splitlines()) + "\n"


def table_text(
    title: str, headers: Sequence[str], rows: Iterable[Sequence[str]], width: int = 120
) -> str:
    """A table of text cells, a row each, left-aligned, rendered with no notes."""
    table = new_table(title, headers)
    for cells in rows:
        table.add_row(*cells)
    return render_table(table, width=width)
