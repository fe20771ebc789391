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


def test_a_history_read_from_part_of_the_store_places_only_runs_with_a_full_window():
    rng = np.random.default_rng(34)
    earlier = _history([0.1] * 6, rng)
    cand = _run(0.1, 30, rng)
    assert cand.uid in placements([cand], earlier, window=5, complete=False)
    assert cand.uid not in placements([cand], earlier, window=10, complete=False)
    assert placements([cand], earlier, window=10)[cand.uid].earlier == 6


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


def test_the_history_chart_draws_each_configurations_runs_with_its_band_and_verdicts():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from accelbench.render import charts
    from accelbench.render.html import html_report

    rng = np.random.default_rng(33)
    seconds = [0.1 * (1 + 0.005 * x) for x in rng.standard_normal(8)] + [0.12]
    runs = _history(seconds, rng)
    figure, ax = plt.subplots()
    charts._history_panel(ax, runs, histories(runs))
    assert [t.get_text() for t in ax.texts] == ["REGRESSION"]  # only the slow last run
    plt.close(figure)
    assert charts.history_chart(runs).startswith(b"\x89PNG")
    assert charts.history_chart(runs[:1]) is None  # one run is no history
    assert "<h3>History: each configuration" in html_report(runs)
