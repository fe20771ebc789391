"""The option lists of `docs/commands/*.md` and the table of every command's options side by
side in `docs/options.md`, generated from the parser so they cannot drift.

`python -m accelbench.cli.docs` rewrites the block between the markers in each page;
`--check` rewrites nothing and exits 1 naming the pages whose block differs (a test runs it).
Each command's options are rendered from its argparse actions: the option, its metavar and
its help, grouped as `--help` groups them.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from .main import build_parser

# One page per command; a page may document several parsers (a command and its sub-commands).
PAGES: dict[str, tuple[str, ...]] = {
    "run": ("run",),
    "explain": ("explain",),
    "export": ("export",),
    "optimize": ("optimize",),
    "verify": ("verify",),
    "calibrate": ("calibrate",),
    "devices": ("devices",),
    "workloads": ("workloads",),
    "results": ("results", "results export", "results import"),
    "compare": ("compare",),
    "report": ("report", "plot"),
}
BEGIN = (
    "<!-- options: generated from the parser by `python -m accelbench.cli.docs`; do not edit -->"
)
END = "<!-- end of the generated options -->"
REGENERATE = "python -m accelbench.cli.docs"
OPTIONS_PAGE = "options"  # docs/options.md: every command's options side by side


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """A parser's sub-commands by name (none for a parser without them)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def command_parser(path: str) -> argparse.ArgumentParser:
    parser = build_parser()
    for word in path.split():
        parser = subcommands(parser)[word]
    return parser


def _invocation(action: argparse.Action) -> str:
    if not action.option_strings:
        name = action.metavar or action.dest.upper()
        return f"`{name} ...`" if action.nargs in ("*", "+") else f"`{name}`"
    option = ", ".join(action.option_strings)
    if action.nargs == 0:
        return f"`{option}`"
    if action.metavar is not None:
        return f"`{option} {action.metavar}`"
    if action.choices is not None:
        return f"`{option} {{{','.join(map(str, action.choices))}}}`"
    return f"`{option} {action.dest.upper()}`"


def _help(action: argparse.Action, prog: str) -> str:
    text = action.help or ""
    if "%" in text:  # as argparse expands it
        params = dict(vars(action), prog=prog)
        if action.choices is not None:
            params["choices"] = ", ".join(map(str, action.choices))
        text = text % params
    return " ".join(text.split()).replace("|", "\\|")


def _describe(parser: argparse.ArgumentParser, titled: bool) -> list[str]:
    lines = [f"`{parser.prog}`:", ""] if titled else []
    for group in parser._action_groups:
        shown = [
            action
            for action in group._group_actions
            if action.help != argparse.SUPPRESS
            and not isinstance(action, (argparse._HelpAction, argparse._SubParsersAction))
        ]
        if shown:
            lines += [f"*{group.title}*", "", "| option | meaning |", "|---|---|"]
            lines += [f"| {_invocation(a)} | {_help(a, parser.prog)} |" for a in shown]
            lines.append("")
    return lines


def options_markdown(page: str) -> str:
    """The generated block of one page, markers included."""
    paths = PAGES[page]
    lines = [BEGIN, ""]
    for path in paths:
        lines += _describe(command_parser(path), titled=len(paths) > 1)
    return "\n".join([*lines, END])


def idea(option: str) -> str:
    """The idea an option names, the same for its singular and its plural (`--devices` for a
    list, `--device` for one value): the option without its dashes and a final s."""
    return option.lstrip("-").removesuffix("s")


def _cell(action: argparse.Action) -> str:
    """How a command spells an idea: its option and what it takes (a list, one value, none);
    a long list of choices by its name alone (the command's page lists them)."""
    if action.metavar is None and len(list(action.choices or ())) > 4:
        return f"`{action.option_strings[0]} {action.dest.upper()}`"
    return _invocation(action).replace("|", "\\|")


def spellings() -> dict[str, dict[str, argparse.Action]]:
    """Each idea's option, by command, over every command's parser."""
    table: dict[str, dict[str, argparse.Action]] = {}
    for path in (path for paths in PAGES.values() for path in paths):
        for action in command_parser(path)._actions:
            shown = action.option_strings and action.help != argparse.SUPPRESS
            if shown and not isinstance(action, argparse._HelpAction):
                table.setdefault(idea(action.option_strings[0]), {})[path] = action
    return table


def options_table() -> str:
    """The generated block of docs/options.md: a row per idea, a column per command."""
    commands = [path for paths in PAGES.values() for path in paths]
    lines = [BEGIN, "", f"| idea | {' | '.join(commands)} |", f"|---{'|---' * len(commands)}|"]
    for _, spelled in sorted(spellings().items()):
        cells = [_cell(spelled[c]) if c in spelled else "" for c in commands]
        named = min((a.option_strings[0] for a in spelled.values()), key=len)
        lines.append(f"| {named.lstrip('-')} | {' | '.join(cells)} |")
    return "\n".join([*lines, "", END])


def _regenerated(text: str, page: str) -> str:
    head, found, rest = text.partition(BEGIN)
    _, ended, tail = rest.partition(END)
    if not (found and ended):
        raise SystemExit(f"{page}.md has no generated block ({BEGIN} ... {END})")
    block = options_table() if page == OPTIONS_PAGE else options_markdown(page)
    return head + block + tail


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=REGENERATE, description=__doc__, allow_abbrev=False)
    parser.add_argument("--check", action="store_true", help="only say which pages differ")
    parser.add_argument("folder", nargs="?", default="docs", type=Path, help="the docs folder")
    args = parser.parse_args(argv)
    stale = []
    pages = {page: args.folder / "commands" / f"{page}.md" for page in PAGES}
    for page, path in {**pages, OPTIONS_PAGE: args.folder / f"{OPTIONS_PAGE}.md"}.items():
        text = path.read_text()
        new = _regenerated(text, page)
        if new != text:
            stale.append(str(path))
            if not args.check:
                path.write_text(new)
    if stale:
        verb = "differ from the parser" if args.check else "regenerated"
        print(f"{verb}: {', '.join(stale)}", file=sys.stderr)
    return 1 if stale and args.check else 0


if __name__ == "__main__":
    sys.exit(main())
