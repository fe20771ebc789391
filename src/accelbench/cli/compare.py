"""`accelbench compare`: results side by side along one dimension, or a regression check of a
candidate run against a baseline run, or against each configuration's history."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from ..errors import UsageError
from .options import (
    Commands,
    add_filters,
    add_output_options,
    count,
    filters,
    fraction,
    result_id,
)
from .output import emit_json, read_store, result_json, stored_history, width

if TYPE_CHECKING:
    from ..analysis.compare import Comparison
    from ..core.result import Result
    from ..store.db import Store

# The gate's exit statuses (0: every configuration ok or faster); 2 is bad input, as everywhere.
EXIT_REGRESSION = 1
EXIT_UNDETERMINED = 3  # the data could not tell: neither a pass nor a regression


def add_parser(commands: Commands) -> None:
    from ..analysis.compare import FASTEST
    from ..analysis.history import MIN_HISTORY
    from ..levers import dimensions  # torch-free: the base dimensions and each lever's

    compare = commands.add_parser(
        "compare",
        help="results side by side with confidence intervals over processes; or a regression check",
        description="Compare results that differ in one dimension (--by), each against a "
        "baseline, with a 95% CI taken over their processes (paired where they ran side by "
        "side in one sweep). Without --by: by device where some "
        "configuration ran on two devices, else by run where some configuration ran in several "
        "runs (each run against its oldest), else each configuration against the fastest of its "
        "workload and mode on its device. A comparison with fewer than 2 processes "
        "or 6 timed samples on a side has no interval and says so: never significant, never a "
        "regression. The regression gate: --candidate RUN alone judges each configuration of "
        "the run against its history on the same machine (the runs stored before it, the last "
        f"--window; a 95% prediction interval for the next run, from at least {MIN_HISTORY} "
        "earlier runs); --baseline RUN --candidate RUN judges it against one other run (a 95% "
        "CI over processes). Verdicts: REGRESSION, faster, ok (the data rule out a slowdown "
        "past --threshold), undetermined (they cannot: the smallest detectable change is "
        "printed). Exit status: 0 every configuration ok or faster; 1 a regression; "
        f"{EXIT_UNDETERMINED} no regression, but some configuration undetermined; 2 bad input.",
    )
    compare.add_argument(
        "--by",
        choices=tuple(dimensions()),
        help="the dimension to compare (default: device where a configuration ran on two "
        "devices; else run where one ran in several runs: each against its oldest; else "
        "configuration: each against the fastest of its workload and mode)",
    )
    compare.add_argument(
        "--baseline-value",
        metavar="VALUE",
        help="the baseline among the values (default: cpu, fp32, train, off...; for "
        f"configuration, {FASTEST}, which any dimension takes: the one with the most samples/s)",
    )
    _add_gate_options(compare)
    add_filters(compare)
    add_output_options(compare, progress=False)
    compare.set_defaults(handler=handle)


def _add_gate_options(compare: argparse.ArgumentParser) -> None:
    """The regression gate's: the runs it judges, its look-back and its threshold."""
    from ..analysis.history import DEFAULT_WINDOW, MIN_HISTORY

    compare.add_argument(
        "--baseline",
        metavar="RUN",
        help="a result id or a sweep id (needs --candidate; never the candidate itself)",
    )
    compare.add_argument(
        "--candidate",
        metavar="RUN",
        help="a result id or a sweep id: the run the gate judges; without --baseline, against "
        "each configuration's history on its machine",
    )
    compare.add_argument(
        "--window",
        type=count(MIN_HISTORY),
        default=DEFAULT_WINDOW,
        metavar="N",
        help=f"the history gate's look-back: the last N earlier runs (default: {DEFAULT_WINDOW})",
    )
    compare.add_argument(
        "--threshold",
        type=fraction,
        default=0.05,
        metavar="PCT",
        help="a slowdown past this is a regression (default: 5%%)",
    )
    compare.add_argument(
        "--include-partial",
        action="store_true",
        help="compare results measured in fewer processes than planned (an interrupted sweep, "
        "marked partial) as they are; by default they get no interval, so nothing about them "
        "is called significant or a regression (`run --resume` completes them)",
    )


def handle(args: argparse.Namespace) -> int:
    from ..render.console import compare_table

    if args.baseline and not args.candidate:
        raise UsageError(
            "--baseline needs --candidate: give both RUNs, or --candidate RUN alone to judge "
            "it against its history"
        )
    with read_store(args) as store:
        if args.baseline:
            return _regressions(args, store)
        if args.candidate:
            return _against_history(args, store)
        comparison, why = _comparison(args, store.results(filters(args)))
    if args.json:
        emit_json(
            [
                {
                    "by": comparison.by,
                    "value": row.value,
                    "result": result_json(row.result),
                    "baseline_id": row.baseline.id if row.baseline else None,
                    "speedup": row.speedup.to_dict() if row.speedup else None,
                }
                for row in comparison.rows
            ]
        )
    else:
        print(compare_table(comparison, width=width(), why=why), end="")
    return 0


def _comparison(args: argparse.Namespace, results: list[Result]) -> tuple[Comparison, str]:
    """The comparison asked for; without --by, by device where that compares anything, else
    each configuration against the fastest of its group, and why (for the table's title)."""
    from ..analysis.compare import compare
    from ..levers import CONFIGURATION, dimensions

    partial = args.include_partial
    if args.by is not None:
        by = dimensions()[args.by]
        return compare(results, by, args.baseline_value, include_partial=partial), ""
    device = dimensions()["device"]
    by_device = compare(results, device, args.baseline_value, include_partial=partial)
    if args.baseline_value is not None or any(row.speedup for row in by_device.rows):
        return by_device, ""
    by_run = compare(results, dimensions()["run"], include_partial=partial)
    if any(row.speedup for row in by_run.rows):
        why = (
            "no configuration here ran on two devices, and some ran in several runs, so each "
            "run is against the configuration's oldest run on its machine (--by configuration "
            "for the newest of each against the fastest)"
        )
        return by_run, why
    why = (
        "no configuration here ran on two devices, so each is against the fastest of its "
        "workload and mode on its device"
    )
    return compare(results, CONFIGURATION, include_partial=partial), why


def _regressions(args: argparse.Namespace, store: Store) -> int:
    """The candidate run against the baseline run: exit 1 when a configuration slowed down."""
    from ..analysis.compare import compare_runs
    from ..levers import spec_json
    from ..render.console import changes_table

    base, cand = (_run(store, ref) for ref in (args.baseline, args.candidate))
    _refuse_itself(args, base, cand)
    changes = compare_runs(base, cand, args.threshold, args.include_partial)
    if not changes:  # a gate that compared nothing has not passed
        raise UsageError(
            f"no configuration of the baseline run {args.baseline} is in the candidate run "
            f"{args.candidate}: the regression check compared nothing"
        )
    if args.json:
        emit_json(
            [
                {
                    "spec": spec_json(c.baseline.spec),
                    "speedup": c.speedup.to_dict() if c.speedup else None,
                    "candidate_status": c.candidate.status,
                    "regression": c.regression,
                    "verdict": c.verdict,
                    "detectable_slowdown": c.detectable,
                    "why": c.why,
                }
                for c in changes
            ]
        )
    else:
        print(changes_table(changes, args.threshold, width=width()), end="")
    return exit_status([c.verdict for c in changes])


def _refuse_itself(args: argparse.Namespace, base: list[Result], cand: list[Result]) -> None:
    """A result compared with itself is 1.00x [1.00–1.00] by construction, whatever changed:
    no evidence, so refused."""
    shared = sorted({r.id for r in base} & {r.id for r in cand}, key=lambda i: i or 0)
    if shared:
        ids = ", ".join(f"#{i}" for i in shared)
        raise UsageError(
            f"--baseline {args.baseline} and --candidate {args.candidate} hold the same "
            f"result(s) {ids}: a run compared with itself is 1.00x by construction; give two "
            "different runs (sweep or result ids: see `accelbench results`)"
        )


def exit_status(verdicts: list[str]) -> int:
    """1 on any regression; else 3 where some verdict is undetermined; else 0."""
    if "REGRESSION" in verdicts:
        return EXIT_REGRESSION
    return EXIT_UNDETERMINED if "undetermined" in verdicts else 0


def _against_history(args: argparse.Namespace, store: Store) -> int:
    """Each configuration of the candidate run against its history on the same machine."""
    from ..analysis.history import judge_run
    from ..levers import spec_json
    from ..render.console import history_table

    candidates = _run(store, args.candidate)
    judged = judge_run(
        candidates, stored_history(store, candidates)[0], args.threshold, args.window
    )
    if not judged:
        raise UsageError(f"the run {args.candidate} holds no timing to judge (verify results?)")
    if args.json:
        emit_json(
            [
                {
                    "spec": spec_json(j.candidate.spec),
                    "candidate_id": j.candidate.id,
                    "candidate_status": j.candidate.status,
                    "history": j.history.to_dict(),
                    "change": j.change,
                    "verdict": j.verdict,
                    "why": j.why,
                }
                for j in judged
            ]
        )
    else:
        print(history_table(judged, args.threshold, width=width()), end="")
    return exit_status([j.verdict for j in judged])


def _run(store: Store, ref: str) -> list[Result]:
    """The results of a RUN: a result id, or a sweep id."""
    from ..store.db import Filters

    number = result_id(ref)
    chosen = Filters(sweep=ref) if number is None else Filters(id=number)
    results = store.results(chosen)
    if not results:
        raise UsageError(f"no stored result or sweep {ref!r}; see `accelbench results`")
    return results
