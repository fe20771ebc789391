"""`accelbench compare` as a function (`accelbench.compare`): stored results side by side.

analysis/compare does the comparing; this is its door for library callers, who name the
dimension as the command does (`"device"`) or pass a Dimension, and get a UsageError in the
command's words for anything else, not an AttributeError from deep inside."""

from __future__ import annotations

from collections.abc import Iterable

from ..analysis.compare import Comparison, Dimension
from ..analysis.compare import compare as compare_results
from ..core.result import Result
from ..errors import UsageError
from ..levers import find_dimension

__all__ = ["compare"]


def compare(
    results: Iterable[Result],
    by: str | Dimension,
    baseline_value: str | None = None,
    within_sweep: bool = False,
    include_partial: bool = False,
) -> Comparison:
    """Group `results` (from `Store(...).results(...)`, newest first) that differ only in
    `by` (a dimension's name, as `compare --by` takes it, or `find_dimension(name)`) and set
    each beside its group's baseline (`baseline_value`, or the dimension's own)."""
    dimension = find_dimension(by) if isinstance(by, str) else by
    if not isinstance(dimension, Dimension):
        raise UsageError(f"compare: by takes a dimension's name such as 'device', not {by!r}")
    if isinstance(results, (str, bytes)) or not isinstance(results, Iterable):
        raise UsageError(f"compare takes a sequence of Results, not {results!r}")
    given = list(results)
    bad = [r for r in given if not isinstance(r, Result)]
    if bad:
        raise UsageError(
            f"compare takes Results (from Store(...).results()), not {type(bad[0]).__name__}"
        )
    return compare_results(given, dimension, baseline_value, within_sweep, include_partial)
