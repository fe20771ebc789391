"""The levers' options of `run` (a list each) and of `explain` (one value each), generated
from the lever registry: a new lever's option appears here without an edit."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the registry loads when the parser is built, inside main's error handling
    from ..core.result import Value
    from ..levers import Lever

__all__ = ["add_lever_options", "add_single_lever_options", "lever_values"]


def add_lever_options(
    parser: argparse.ArgumentParser, groups: dict[str, argparse._ArgumentGroup]
) -> None:
    """One list-valued option per lever, in the --help section the lever names (made here
    when `groups` does not have it yet)."""
    from ..levers import all_levers

    for lever in (lever for lever in all_levers() if lever.option):
        if lever.group_title not in groups:
            groups[lever.group_title] = parser.add_argument_group(lever.group_title)
        groups[lever.group_title].add_argument(
            lever.option,
            dest=_dest(lever),
            type=_values(lever),
            default=(lever.default,),
            metavar=lever.metavar,
            help=lever.help.replace("%", "%%"),
        )


def add_single_lever_options(group: argparse._ArgumentGroup) -> None:
    """One option per lever taking one value (one configuration: explain), spelled in the
    singular where run's list is a plural (`--precision`, not `--precisions`)."""
    from ..levers import all_levers

    for lever in (lever for lever in all_levers() if lever.option):
        group.add_argument(
            lever.single_option or lever.option,
            dest=_dest(lever),
            type=_value(lever),
            default=(lever.default,),
            metavar="VALUE",
            help=lever.help.replace("%", "%%"),
        )


def lever_values(args: argparse.Namespace) -> dict[str, tuple[Value, ...]]:
    """Each lever's values as asked for, by lever name (before `Lever.sweep_values`)."""
    from ..levers import all_levers

    return {lever.name: getattr(args, _dest(lever)) for lever in all_levers() if lever.option}


def _dest(lever: Lever) -> str:
    return f"lever_{lever.name}"


def _value(lever: Lever) -> Callable[[str], tuple[Value, ...]]:
    """One of the lever's words, as the 1-tuple `lever_values` gives for every lever; a list
    is refused, in one line."""

    def parse(text: str) -> tuple[Value, ...]:
        if "," in text:
            raise argparse.ArgumentTypeError(f"one value, not a list ({text}): run takes lists")
        try:
            return (lever.parse(text.strip()),)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return parse


def _values(lever: Lever) -> Callable[[str], tuple[Value, ...]]:
    """A comma-separated list of the lever's words, each parsed by the lever, duplicates
    dropped; argparse reports a bad one in one line."""

    def parse(text: str) -> tuple[Value, ...]:
        words = [word.strip() for word in text.split(",") if word.strip()]
        if not words:
            raise argparse.ArgumentTypeError("empty list")
        try:
            return tuple(dict.fromkeys(lever.parse(word) for word in words))
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return parse
