"""The parser every accelbench command is built on: each error on one line, a close match
offered for a mistyped command, option or value, and the `--help` of the command that refused.

Prefix matching is off (`allow_abbrev=False`): argparse would otherwise take `--device` for
`--devices`, silently, and a later option starting the same way would change what an old
command line means. Spellings that were replaced are refused like any unknown option, with the
new one offered: accepting them quietly would leave two names for one idea.
"""

from __future__ import annotations

import argparse
import difflib
import sys
from collections.abc import Iterable, Sequence
from typing import Any

__all__ = ["RENAMED", "Parser", "did_you_mean"]

# The spellings issue 37 replaced, and what replaced them where a command offers the new one:
# export's example batch is `--batch-size` as everywhere else; the timed blocks of run,
# explain and optimize are `--blocks` (verify's `--epochs` stays: passes over the data); and
# verify's accuracy points are `--accuracy-tolerance`, beside its `--loss-tolerance`
# (optimize's `--tolerance` stays: a relative output error).
RENAMED = {
    "--batch": "--batch-size",
    "--epochs": "--blocks",
    "--tolerance": "--accuracy-tolerance",
}


def did_you_mean(word: str, valid: Iterable[str]) -> str:
    """' (did you mean X?)' for the closest of `valid` to `word`, or '' when none is close.
    Options are matched without their dashes, which every option shares."""
    names = {choice.lstrip("-"): choice for choice in valid}
    close = difflib.get_close_matches(word.lstrip("-"), list(names), n=1)
    return f" (did you mean {names[close[0]]}?)" if close else ""


class Parser(argparse.ArgumentParser):
    """argparse with prefix matching off, its errors on one line like every other accelbench
    error, and a suggestion where a word is close to one it knows. The command's sub-parsers
    are of this class too (argparse makes them of their parent's)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["allow_abbrev"] = False
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> Any:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        """As argparse, but what this parser does not know is refused here, where its own
        options are known, rather than by the top parser that only knows the commands."""
        args = sys.argv[1:] if args is None else list(args)
        self._check_leading(args)
        parsed, extra = super().parse_known_args(args, namespace)
        if extra:
            self.error(self._unknown(extra))
        return parsed, extra

    def _check_leading(self, args: list[str]) -> None:
        """An unknown option before the command a parser requires (`accelbench --json
        devices`): argparse would say only that the command is missing, or take the option's
        value for the command."""
        commands = [a for a in self._actions if isinstance(a, argparse._SubParsersAction)]
        known = {name for action in self._actions for name in action.option_strings}
        first = args[0].partition("=")[0] if args else ""
        if commands and commands[0].required and first.startswith("-") and first not in known:
            where = f" (options go after the {str(commands[0].metavar).lower()})"
            self.error(f"unknown option {first}{self._suggested(first) or where}")

    def _unknown(self, extra: list[str]) -> str:
        options = [word for word in extra if word.startswith("-") and len(word) > 1]
        if not options:
            return f"unexpected argument(s): {' '.join(extra)}"
        option = options[0].partition("=")[0]
        return f"unknown option {option}{self._suggested(option)}"

    def _suggested(self, option: str) -> str:
        known = [name for action in self._actions for name in action.option_strings]
        if RENAMED.get(option) in known:
            return f" (did you mean {RENAMED[option]}?)"
        return did_you_mean(option, known)

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        """An invalid choice named with the closest valid one, a command or action among
        them (argparse checks a sub-command's name here too)."""
        if action.choices is None or value in action.choices:
            return
        valid = [str(choice) for choice in action.choices]
        close = did_you_mean(str(value), valid)
        if isinstance(action, argparse._SubParsersAction):
            what = str(action.metavar or "command").lower()
            usage = f"; {action.help}" if action.help else ""  # what none does, if allowed
            raise argparse.ArgumentError(
                None, f"unknown {what} {value!r}{close}; valid: {', '.join(valid)}{usage}"
            )
        raise argparse.ArgumentError(
            action, f"invalid choice {value!r}{close}; valid: {', '.join(valid)}"
        )
