"""The Server search as both serve notes tell it (a classifier's, serve_notes; a language
model's, serve_lm_notes): its runs, what they took, and the highest target LoadGen judged VALID."""

from __future__ import annotations

from ...modes.serve import Served, ServedRun
from ..text import format_seconds

__all__ = ["highest_valid", "server_runs"]


def server_runs(served: Served) -> tuple[list[ServedRun], str]:
    """The first process's Server runs, in order, and what they took: '6 LoadGen runs in
    12.3 s' (the search's seconds, where one process ran it)."""
    searched = [r for r in served.runs if r.scenario == "server" and r.process == 0]
    took = f"{len(searched)} LoadGen run" + "s" * (len(searched) != 1)
    if served.search_s is not None:
        took += f" in {format_seconds(served.search_s)}"
    return searched, took


def highest_valid(runs: list[ServedRun]) -> ServedRun | None:
    """The run at the highest target LoadGen judged VALID; None where none was."""
    valid = [r for r in runs if r.valid]
    return max(valid, key=lambda r: r.target_qps) if valid else None
