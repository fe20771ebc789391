"""`accelbench report` (HTML or Markdown) and `accelbench plot` (a PNG chart) of the chosen
stored results."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from ..errors import UsageError
from .options import Commands, add_db, add_filters, filters
from .output import read_store, write

if TYPE_CHECKING:
    from ..core.result import Result


def add_parser(commands: Commands) -> None:
    report = commands.add_parser(
        "report",
        help="a self-contained HTML report with charts, or a Markdown table",
        description="Write the chosen results as one self-contained HTML file (machines, "
        "comparison tables, charts; it loads nothing from the network) or as Markdown.",
    )
    report.add_argument("--out", metavar="FILE", help="where to write (Markdown: default stdout)")
    report.add_argument("--format", choices=("html", "markdown"), default="html")
    report.add_argument("--title", default="accelbench report", help="the HTML page's title")
    add_filters(report)
    add_db(report)
    report.set_defaults(handler=handle_report)

    plot = commands.add_parser("plot", help="one chart of the chosen results' throughput as PNG")
    plot.add_argument("--out", required=True, metavar="FILE.png", help="where to write the PNG")
    add_filters(plot)
    add_db(plot)
    plot.set_defaults(handler=handle_plot)


def _chosen(args: argparse.Namespace) -> list[Result]:

    with read_store(args) as store:
        return store.results(filters(args))


def handle_report(args: argparse.Namespace) -> int:
    from ..render import html_report, markdown_report

    results = _chosen(args)
    if args.format == "markdown":
        text = markdown_report(results)
        if not args.out:
            print(text, end="")
            return 0
    else:
        if not args.out:
            raise UsageError("an HTML report needs --out FILE.html")
        text = html_report(results, title=args.title)
    write(args.out, text)
    print(
        f"wrote {args.out}: {len(results)} result(s)"
        if results
        else f"wrote {args.out}: no results match the filters, so it is empty"
    )
    return 0


def handle_plot(args: argparse.Namespace) -> int:
    from ..render import throughput_chart

    png = throughput_chart(_chosen(args))
    if png is None:
        raise UsageError("no measured results match the filters: nothing to plot")
    write(args.out, png)
    print(f"wrote {args.out}")
    return 0
