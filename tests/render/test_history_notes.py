"""`run`'s note on where a run landed against its configuration's earlier runs."""

import numpy as np

from accelbench.analysis.history import histories, history_before, placements
from accelbench.render.console import run_tables
from accelbench.render.console.run_notes import history_note
from tests.analysis.test_history import _history, _run


def test_run_notes_say_the_spread_between_runs_and_whether_this_run_fell_inside():
    rng = np.random.default_rng(31)
    earlier = _history([0.1 * (1 + 0.02 * x) for x in rng.standard_normal(6)], rng)
    slow = _run(0.15, 30, rng)
    placed = placements([slow], earlier + [slow])
    note = history_note(placed[slow.uid])
    found = history_before(slow, histories(earlier)).prediction
    assert note.startswith(f"between runs: sd {found.spread:.1%} over the 6 earlier runs")
    assert "fell OUTSIDE it" in note and "95% prediction interval" in note
    table = run_tables([slow], width=400, history=placed)
    assert "fell OUTSIDE it" in table
    assert "between runs" not in run_tables([slow], width=400)  # no history given: no note


def test_too_few_earlier_runs_is_said_and_no_earlier_run_says_nothing():
    rng = np.random.default_rng(32)
    earlier = _history([0.1, 0.1], rng)
    cand, first = _run(0.1, 30, rng), earlier[0]
    placed = placements([cand, first], earlier + [cand])
    assert first.uid not in placed
    assert history_note(placed[cand.uid]) == (
        "between runs: undetermined: 2 earlier runs of this configuration on this machine, "
        "needs 5 for a prediction interval"
    )
