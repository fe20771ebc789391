"""The modes' own options of `run` (lists) and `optimize` (one value), generated from each
registered mode's `options` (core/mode_options): a new mode's option appears here without an
edit. An option two modes share is one option."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..core.mode_options import ModeOption
    from ..core.result import Value

__all__ = ["add_mode_options", "mode_arg_values"]


def add_mode_options(group: argparse._ActionsContainer, *, single: bool = False) -> None:
    """One option per mode option: `run`'s list-valued one, or with `single` `optimize`'s
    single-valued one (an option that has none is left out there). A flag the command has
    already (a lever's, say) is a plugin's mistake, said in one line."""
    from ..errors import UsageError

    for option, owners in _declared().items():
        flag = option.single if single else option.option
        if not flag:
            continue
        if flag in group._option_string_actions:
            raise UsageError(
                f"mode {owners[0]!r} declares {flag}, an option the command has already; "
                "give its option another name"
            )
        which = f"--mode{'' if single else 's'} {','.join(owners)}"
        group.add_argument(
            flag,
            dest=_dest(option),
            type=_one(option) if single else _values(option),
            default=None,
            metavar=option.single_metavar if single else option.metavar,
            help=f"{which}: {option.help}".replace("%", "%%"),
        )


def mode_arg_values(args: argparse.Namespace) -> dict[str, tuple[Value, ...]]:
    """Each mode option given, by its name: its values (one, for `optimize`)."""
    found: dict[str, tuple[Value, ...]] = {}
    for option in _declared():
        value: Any = getattr(args, _dest(option), None)
        if value is not None:
            found[option.name] = value if isinstance(value, tuple) else (value,)
    return found


def _declared() -> dict[ModeOption, list[str]]:
    """Every mode option, with the modes that declare it, in registration order."""
    from ..core.modes import all_modes

    declared: dict[str, tuple[ModeOption, list[str]]] = {}
    for mode in all_modes():
        for option in mode.options:
            declared.setdefault(option.name, (option, []))[1].append(mode.name)
    return {option: owners for option, owners in declared.values()}


def _dest(option: ModeOption) -> str:
    return f"mode_arg_{option.name}"


def _one(option: ModeOption) -> Callable[[str], Value]:
    def parse(word: str) -> Value:
        try:
            return option.parse(word.strip())
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return parse


def _values(option: ModeOption) -> Callable[[str], tuple[Value, ...]]:
    """A comma-separated list, each word parsed by the option, duplicates dropped; argparse
    reports a bad one in one line."""
    one = _one(option)

    def parse(text: str) -> tuple[Value, ...]:
        words = [word.strip() for word in text.split(",") if word.strip()]
        if not words:
            raise argparse.ArgumentTypeError("empty list")
        return tuple(dict.fromkeys(one(word) for word in words))

    return parse
