"""backends/serve_checks: both serving paths' settings refuse the same bad values with the
same line, and run Server's prerequisites first, in their own scenarios' order."""

from __future__ import annotations

import math
import re

import pytest

from accelbench.backends.serving import ServeSettings
from accelbench.backends.serving_lm import TokenSettings
from accelbench.errors import UsageError

BOTH = [ServeSettings, TokenSettings]


@pytest.mark.parametrize("settings", BOTH)
@pytest.mark.parametrize(
    ("values", "said"),
    [
        ({"duration_s": 0.0}, "duration_s must be a positive number of seconds, not 0.0"),
        ({"search_budget_s": math.inf}, "search_budget_s must be a positive number of seconds"),
        ({"server_qps": math.nan}, "the Server target must be a positive QPS, not nan"),
        ({"server_qps": "fast"}, "the Server target must be a positive QPS, not 'fast'"),
        ({"wait_s": math.nan}, "the wait bound must be 0 s or more, not nan"),
        ({"min_queries": 1.5}, "min_queries must be a positive integer, not 1.5"),
        ({"search_steps": True}, "search_steps must be a positive integer, not True"),
    ],
)
def test_both_settings_refuse_a_bad_value_in_the_same_line(settings, values, said):
    with pytest.raises(UsageError, match="^" + re.escape(said)):
        settings(**values)


@pytest.mark.parametrize(
    ("settings", "valid"),
    [
        (ServeSettings, "singlestream, offline, server, multistream"),
        (TokenSettings, "singlestream, offline, server"),
    ],
)
def test_no_scenario_is_said_with_the_valid_ones(settings, valid):
    with pytest.raises(UsageError, match=f"^no scenario given; valid: {valid}$"):
        settings(scenarios=())


def test_server_runs_its_prerequisites_first_in_the_paths_order():
    assert TokenSettings(scenarios=("server",)).runs() == ("singlestream", "offline", "server")
    both = ServeSettings(scenarios=("multistream", "server"))
    assert both.runs() == ("singlestream", "offline", "server", "multistream")
    assert ServeSettings(scenarios=("offline",)).runs() == ("offline",)
