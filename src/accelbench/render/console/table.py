"""A rich table built and rendered to plain text, the way every console renderer shows one.

Every string that reaches rich here (title, headers, cells, notes) may hold stored text from an
imported file, so each is handed over as a `rich.text.Text` made `inert`: rich never parses it
as markup (`[/x]` would crash it, `[bold]` would vanish) and no control character reaches the
terminal.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Sequence
from typing import Any

from rich.console import Console, RenderableType
from rich.table import Table
from rich.text import Text

from ..text import encodable, inert, output_encoding

__all__ = ["SafeTable", "new_table", "plain", "render_table", "table_text"]


def plain(text: str) -> Text:
    """`text` as rich shows it literally: no markup, no control characters, and escapes for
    what the output's encoding lacks (render/text's output_encoding)."""
    return Text(encodable(inert(text)))


class _Buffer(io.StringIO):
    """Where a table is drawn, with the output's encoding: rich draws ASCII borders for an
    encoding that is not UTF."""

    @property  # StringIO's own is read-only (None), which typeshed does not say
    def encoding(self) -> str:  # type: ignore[override]
        return output_encoding()


class SafeTable(Table):
    """A rich Table whose string cells are shown literally (see `plain`)."""

    def add_row(self, *cells: RenderableType | None, **options: Any) -> None:
        safe = [plain(cell) if isinstance(cell, str) else cell for cell in cells]
        super().add_row(*safe, **options)


def new_table(title: str, headers: Sequence[str], left_columns: int | None = None) -> SafeTable:
    """A table with these headers; past `left_columns` (numbers) they align right. A word too
    long for its column folds onto the next line, never cut with "…": a name cut short can
    read as another (`…/mymodels/cnn.py:ma…` for make_cnn and make_vit alike)."""
    table = SafeTable(title=plain(title), title_justify="left")
    for i, header in enumerate(headers):
        right = left_columns is not None and i >= left_columns
        table.add_column(plain(header), justify="right" if right else "left", overflow="fold")
    return table


def render_table(table: Table, notes: Sequence[str] = (), width: int = 120) -> str:
    """The table, then each note on its own line, as text without colour."""
    buffer = _Buffer()
    console = Console(file=buffer, width=width, no_color=True, highlight=False, soft_wrap=False)
    console.print(table)
    for note in notes:
        console.print(plain(note), soft_wrap=True)
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
