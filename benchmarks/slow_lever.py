"""A planted slowdown, as a lever plugin: `--slow-levels on` makes every 10th step run twice,
about 10% more work, so compute-bound work slows by about 10% (launch-bound work by less or
more, as the host's overheads move). For `benchmarks/history_check.py --planted`.

    ACCELBENCH_LEVERS=benchmarks/slow_lever.py accelbench run seed-cnn --devices cuda \
        --slow-levels on --db planted.db

Matching planted runs to the clean history: a planted run's spec carries `slow: on`, so it is
a configuration of its own to accelbench (its label says "slow", `compare --by slow` compares
the two). history_check.py drops this lever from each planted spec before it looks the clean
history up, so a planted run is judged against the runs of the same configuration without it.
Run the clean and the planted runs with the same options otherwise, on the same machine.
"""

from __future__ import annotations

from accelbench.levers import Lever, register

EVERY = 10  # every 10th step runs twice: 11 steps of work for 10


@register
class Slow(Lever):
    name = "slow"
    option = "--slow-levels"
    help = "a planted slowdown: off, on (every 10th step runs twice; default: off)"
    dimension = "slow"
    default = ""
    words = ("off", "on")
    late = True  # never part of optimize's stacks

    def from_word(self, word):
        return "" if word == "off" else word

    def word(self, value):
        return value or "off"

    def label(self, value):
        return "slow" if value else ""

    def apply_step(self, prep, value):
        step, calls = prep.step, [0]

        def slower():
            step()
            calls[0] += 1
            if calls[0] % EVERY == 0:  # no host sync: the extra step is queued like the rest
                step()

        prep.step = slower

    def code(self, spec, device):
        return [f"# planted slowdown: every {EVERY}th step runs twice"]
