"""The options the commands share: value types and typed requests built from the options."""

import argparse
from dataclasses import dataclass

import pytest

from accelbench.cli.main import build_parser
from accelbench.cli.options import fraction, from_args, points, positive, seconds, share
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
        (seconds, "0", "must be more than 0 seconds"),
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
