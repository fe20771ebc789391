"""The largest numbers accelbench takes, and the one check of each kind of number, shared by
the command line's parsers and the typed requests (a library caller is refused as the command
is). An unbounded number is never useful and often harmful: `inf` seconds never end a loop,
and `math.floor(inf)` raises; a count past SQLite's integers cannot be stored."""

from __future__ import annotations

import math

__all__ = ["MOST_COUNT", "MOST_SECONDS", "count_problem", "seconds_problem"]

MOST_COUNT = 10**9  # no count accelbench takes is larger; SQLite's integers end at 2**63
MOST_SECONDS = 7 * 24 * 3600  # a week: no time limit or budget accelbench takes is longer
SECONDS_RANGE = f"a number of seconds above 0 and at most {MOST_SECONDS:,} (a week)"


def seconds_problem(value: object) -> str | None:
    """What is wrong with `value` as a duration (None: nothing): it must be a finite number
    above 0 and at most MOST_SECONDS."""
    number = not isinstance(value, bool) and isinstance(value, (int, float))
    if number and math.isfinite(value) and 0 < value <= MOST_SECONDS:  # type: ignore[arg-type, operator]
        return None
    return f"must be {SECONDS_RANGE}"


def count_problem(value: object, least: int) -> str | None:
    """What is wrong with `value` as a count (None: nothing): a whole number from `least` up
    to MOST_COUNT."""
    if type(value) is not int or not least <= value <= MOST_COUNT:
        return f"must be a whole number from {least} to {MOST_COUNT:,}"
    return None
