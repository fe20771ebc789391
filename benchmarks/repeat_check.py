"""Does each run's interval hold when the command is run again? (issue 25)

Give it the databases of N independent runs of one configuration (one `accelbench run` each):
for every run it prints the median, the 95% interval and its processes, and how many of the
other runs' medians that interval contains.

    python3 benchmarks/repeat_check.py run1.db run2.db run3.db run4.db [--workload W]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from accelbench.store.db import Filters, Store  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dbs", nargs="+")
    parser.add_argument("--workload")
    parser.add_argument("--device")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    runs = []
    for db in args.dbs:
        with Store(db, create=False) as store:
            found = [
                r
                for r in store.results(Filters(workload=args.workload, device=args.device))
                if r.measurement is not None
            ]
        if len(found) != 1:
            sys.exit(f"{db}: {len(found)} measured results match; give --workload/--device")
        runs.append(found[0])
    rows = []
    for i, r in enumerate(runs):
        rate = r.measurement.rate
        others = [o.measurement.rate.median for j, o in enumerate(runs) if j != i]
        held = sum(rate.ci_low <= x <= rate.ci_high for x in others)
        spread = r.measurement.spread
        rows.append(
            {
                "db": args.dbs[i],
                "median": rate.median,
                "ci": [rate.ci_low, rate.ci_high],
                "half_width": (rate.ci_high - rate.ci_low) / 2 / rate.median,
                "processes": r.measurement.processes,
                "between_sd": spread.between if spread else None,
                "within_sd": spread.within if spread else None,
                "others_held": held,
                "others": len(others),
            }
        )
    medians = [row["median"] for row in rows]
    summary = {
        "runs": rows,
        "spread_of_medians": (max(medians) - min(medians)) / min(medians),
        "runs_holding_all_others": sum(row["others_held"] == row["others"] for row in rows),
    }
    if args.json:
        print(json.dumps(summary, indent=1))
        return
    for row in rows:
        print(
            f"{row['db']}: {row['median']:.4g} it/s [{row['ci'][0]:.4g}-{row['ci'][1]:.4g}] "
            f"±{row['half_width']:.1%}, {row['processes']} processes (between {row['between_sd']}"
            f", within {row['within_sd']}): holds {row['others_held']} of {row['others']}"
        )
    print(
        f"medians {summary['spread_of_medians']:.1%} apart; "
        f"{summary['runs_holding_all_others']} of {len(rows)} runs hold every other median"
    )


if __name__ == "__main__":
    main()
