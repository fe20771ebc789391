"""Issue 37 item 12: `accelbench.compare` takes the dimension by name, as `compare --by` does,
and says what it takes when given something else."""

from __future__ import annotations

import re

import pytest

import accelbench
from accelbench import UsageError
from tests.conftest import run_cli


def test_compare_takes_a_dimension_by_name_or_object():
    assert accelbench.compare([], "device").rows == ()
    assert accelbench.compare([], accelbench.find_dimension("precision")).by == "precision"


def test_an_unknown_dimension_is_the_line_the_command_offers_choices_from():
    with pytest.raises(UsageError, match="cannot compare by 'devcie'; valid: device, machine"):
        accelbench.compare([], "devcie")
    said = run_cli("compare", "--by", "devcie", "--db", "unused.db")
    assert said.returncode == 2 and "'devcie'" in said.stderr


@pytest.mark.parametrize(
    ("results", "by", "said"),
    [
        ([1], "device", "compare takes Results (from Store(...).results()), not int"),
        ("results", "device", "compare takes a sequence of Results, not 'results'"),
        ([], 3, "compare: by takes a dimension's name such as 'device', not 3"),
    ],
)
def test_a_wrong_argument_is_a_usage_error(results, by, said):
    with pytest.raises(UsageError, match=re.escape(said)):
        accelbench.compare(results, by)
