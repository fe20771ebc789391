"""A planted slowdown for the history gate's check (issue 34): a lever plugin that, while
$ACCELBENCH_PLANTED_SLOWDOWN holds a fraction F (e.g. 0.1), runs every round(1/F)-th step
twice, so each timed sample does F more work: a 10% slowdown on compute-bound work, whatever
the device. It never changes a configuration's identity (its value stays the default, which is
never stored), so a planted run is judged against the clean runs' history as a regression in
the code would be.

    ACCELBENCH_LEVERS=benchmarks/planted_slowdown.py ACCELBENCH_PLANTED_SLOWDOWN=0.1 \\
        accelbench run resnet50 --devices cuda ...

Without the variable it does nothing: loaded or not, the run is the same.
"""

from __future__ import annotations

import os
from typing import Any

from accelbench.levers import Lever, register

VARIABLE = "ACCELBENCH_PLANTED_SLOWDOWN"


def _every() -> int:
    """Which step runs twice: every n-th, n = round(1 / fraction); 0 when not planted."""
    fraction = float(os.environ.get(VARIABLE) or 0)
    return round(1 / fraction) if fraction > 0 else 0


@register
class PlantedSlowdown(Lever):
    name = "planted_slowdown"
    # the environment plants it; the option exists because every lever has one, and its one
    # word is the default, which is never stored
    option = "--planted-slowdown"
    help = "benchmarks only: planted by $ACCELBENCH_PLANTED_SLOWDOWN, never by this option"
    default = ""
    words = ("off",)

    def from_word(self, word: str) -> str:
        return ""

    def word(self, value: Any) -> str:
        return "off"

    def active(self, spec: Any) -> bool:
        return _every() > 0

    def apply_step(self, prep: Any, value: Any) -> None:
        every, step, calls = _every(), prep.step, [0]

        def slowed() -> None:
            step()
            calls[0] += 1
            if calls[0] % every == 0:  # the planted extra work: the same step again
                step()

        prep.step = slowed
