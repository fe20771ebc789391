"""Issue 37 item 11: a variant the search's budget stopped says so, not "--timeout", which the
user may never have set."""

from __future__ import annotations

import accelbench
from accelbench import OptimizeRequest


def test_a_variant_stopped_by_the_budget_names_the_budget(tmp_path):
    db = tmp_path / "o.db"
    # a million timed its cannot end within the one second the whole search has
    request = OptimizeRequest(
        workload="mlp", device="cpu", levers="threads", epochs=1_000_000, budget=1
    )
    searched = accelbench.optimize(request, db=db)
    baseline = searched.outcome.trials[0].result  # fp32 eager, the first variant
    assert baseline.status == "timeout"
    assert "s left of the search's --budget 1 s; the worker was stopped" in baseline.error
    assert "--timeout" not in baseline.error
    with accelbench.Store(db) as store:
        assert [r.error for r in store.results()] == [baseline.error]  # stored as said
