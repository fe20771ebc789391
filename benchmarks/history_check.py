"""Does the history gate hold across runs? (issue 34, part 2)

Give it a store holding N runs of one configuration on one machine (the same `accelbench run`
command run N times): each run is judged against the history of the runs before it (the gate of
`accelbench compare --candidate RUN`), and it prints how many runs fell inside the prediction
interval of the runs before them, how many times the gate fired, and the smallest slowdown the
history could detect after each run. With `--planted DB2` (runs of the same configuration with
a planted slowdown, benchmarks/planted_slowdown.py), each planted run is judged against DB's whole
history (its last --window runs): how many the gate catches.

    python3 benchmarks/history_check.py clean.db --workload seed-cnn --device cuda:0 \
        [--planted planted.db] [--threshold 0.05] [--window 20] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from accelbench.analysis.history import (  # noqa: E402
    DEFAULT_WINDOW,
    History,
    Run,
    histories,
    history_before,
    judge,
    key_of,
)
from accelbench.core.result import Result  # noqa: E402
from accelbench.levers import label  # noqa: E402
from accelbench.store.db import Filters, Store  # noqa: E402

# A lever that marks planted runs, dropped from their specs to match the clean history; the
# plugin benchmarks/planted_slowdown.py stores none, so its runs match as they are.
PLANTED_LEVER = "planted_slowdown"


def main() -> None:
    args = _parser().parse_args()
    grouped = histories(_read(args.db, args))
    if len(grouped) != 1:
        found = ", ".join(f"{spec.workload} {spec.device} on {m}" for spec, m in grouped)
        sys.exit(f"{args.db}: {len(grouped)} configurations ({found}); narrow with the filters")
    ((key, runs),) = grouped.items()
    spec = key[0]
    name = f"{spec.workload} {spec.device} {label(spec)}"
    report = {"configuration": name, "machine": key[1], **_aa(runs, args)}
    if args.planted:
        report["planted"] = _planted(runs, _read(args.planted, args), args)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        _print(report)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("db")
    parser.add_argument("--planted", metavar="DB2")
    for name in ("workload", "device", "mode", "precision"):
        parser.add_argument(f"--{name}")
    parser.add_argument("--threshold", type=float, default=0.05)
    parser.add_argument("--window", type=int, default=DEFAULT_WINDOW)
    parser.add_argument("--json", action="store_true")
    return parser


def _read(db: str, args: argparse.Namespace) -> list[Result]:
    chosen = Filters(
        workload=args.workload,
        device=args.device,
        mode=args.mode,
        precision=args.precision,
        status="ok",
    )
    with Store(db, create=False) as store:
        return store.results(chosen)


def _aa(runs: list[Result], args: argparse.Namespace) -> dict[str, object]:
    """Each run against the runs before it: A/A, since all ran the same code."""
    grouped = {key_of(runs[0]): runs}
    rows = []
    for r in runs:
        judged = judge(r, history_before(r, grouped, args.window), args.threshold)
        found = judged.history.prediction
        rows.append(
            {
                "id": r.id,
                "created_at": r.created_at,
                "rate": Run.of(r).rate,
                "earlier": len(judged.history.runs),
                "verdict": judged.verdict,
                "inside": None if found is None else found.holds(Run.of(r).rate),
                "detectable_slowdown": None if found is None else found.slowdown,
            }
        )
    predicted = [row for row in rows if row["inside"] is not None]
    return {
        "runs": len(rows),
        "predicted": len(predicted),
        "inside": sum(bool(row["inside"]) for row in predicted),
        "fired": sum(row["verdict"] == "REGRESSION" for row in rows),
        "each": rows,
    }


def _planted(clean: list[Result], planted: list[Result], args: argparse.Namespace) -> dict:
    """Each planted run against the clean runs' history (the last --window of them)."""
    history_runs = tuple(Run.of(r) for r in clean[-args.window :])
    spec, machine = key_of(clean[0])
    history = History(spec, machine, history_runs)
    rows = []
    for r in sorted(planted, key=lambda r: (r.created_at, r.id or 0)):
        levers = tuple((k, v) for k, v in r.spec.levers if k != PLANTED_LEVER)
        if (replace(r.spec, levers=levers), key_of(r)[1]) != (spec, machine):
            continue  # another configuration, or another machine
        judged = judge(r, history, args.threshold)
        rows.append(
            {"id": r.id, "rate": Run.of(r).rate, "change": judged.change, "verdict": judged.verdict}
        )
    return {
        "runs": len(rows),
        "caught": sum(r["verdict"] == "REGRESSION" for r in rows),
        "each": rows,
    }


def _print(report: dict) -> None:
    print(f"{report['configuration']} on {report['machine']}: {report['runs']} runs")
    for row in report["each"]:
        found = row["detectable_slowdown"]
        where = {None: "no prediction", True: "inside", False: "OUTSIDE"}[row["inside"]]
        after = "—" if found is None else f"{found:.1%}"
        print(
            f"  #{row['id']} {row['created_at']} {row['rate']:,.4g}/s after "
            f"{row['earlier']} runs: {where}, {row['verdict']}; detectable slowdown {after}"
        )
    print(
        f"inside the prediction interval of the runs before: {report['inside']} of "
        f"{report['predicted']}; the gate fired {report['fired']} times"
    )
    planted = report.get("planted")
    if planted:
        for row in planted["each"]:
            change = "—" if row["change"] is None else f"{row['change']:+.1%}"
            print(f"  planted #{row['id']} {row['rate']:,.4g}/s ({change}): {row['verdict']}")
        print(f"planted slowdown caught: {planted['caught']} of {planted['runs']}")


if __name__ == "__main__":
    main()
