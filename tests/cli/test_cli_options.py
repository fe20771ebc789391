"""The options the commands share: value types and typed requests built from the options."""

import argparse
import math
from dataclasses import dataclass

import pytest

from accelbench.cli.main import build_parser
from accelbench.cli.options import fraction, from_args, points, positive, seconds, share
from accelbench.core.limits import MOST_COUNT, MOST_SECONDS
from accelbench.store.db import Filters


@dataclass(frozen=True)
class _Request:
    name: str
    size: int = 1
    seed: int = 0


def test_from_args_takes_the_options_named_as_fields_and_keeps_the_other_defaults():
    args = argparse.Namespace(name="a", size=4, unrelated=True)
    assert from_args(_Request, args) == _Request("a", 4, 0)
    assert from_args(_Request, args, size=9) == _Request("a", 9, 0)  # given wins


def test_the_result_filters_come_from_the_filter_options():
    args = build_parser().parse_args(["results", "--device", "cpu", "--status", "oom"])
    assert from_args(Filters, args) == Filters(device="cpu", status="oom")


@pytest.mark.parametrize(
    ("parse", "text", "message"),
    [
        (seconds, "soon", "'soon' is not a number of seconds"),
        (seconds, "0", "must be a number of seconds above 0"),
        (positive, "x", "'x' is not a number"),
        (fraction, "5x%", "'5x%' is not a percentage like 5%"),
        (share, "1.5", "must be from 0% to 100%"),
        (points, "two%", "'two%' is not a number of percentage points like 2"),
    ],
)
def test_a_bad_value_is_named_in_one_line(parse, text, message):
    with pytest.raises(argparse.ArgumentTypeError, match=message):
        parse(text)


def test_percentages_and_points_read_with_or_without_their_sign():
    assert fraction("5%") == fraction("0.05") == 0.05
    assert points("2%") == points("2") == 2.0


def _numeric_options():
    """Every option of every command whose value is parsed by a type of accelbench's own (the
    levers' options included), with its command."""
    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, command in commands.choices.items():
        for action in command._actions:
            if action.type is not None and action.dest != "db":
                yield pytest.param(action.type, id=f"{name} {action.option_strings[0]}")


@pytest.mark.parametrize("parse", list(_numeric_options()))
@pytest.mark.parametrize("text", ["inf", "-inf", "nan", "1e400", "10000000001"])
def test_no_option_takes_a_number_without_bounds(parse, text):
    """A value is refused in one line, or it is finite and no count passes MOST_COUNT."""
    try:
        parsed = parse(text)
    except (argparse.ArgumentTypeError, ValueError):
        return
    for value in parsed if isinstance(parsed, tuple) else (parsed,):
        if isinstance(value, (int, float)):
            assert math.isfinite(value), f"{text} parsed as {value}"
            assert not isinstance(value, int) or value <= MOST_COUNT


@pytest.mark.parametrize("text", ["inf", "1e400", "604801", "1e10"])
def test_seconds_end_within_a_week_and_the_refusal_names_the_range(text):
    with pytest.raises(argparse.ArgumentTypeError, match="above 0 and at most 604,800"):
        seconds(text)
    assert seconds("604800") == MOST_SECONDS
