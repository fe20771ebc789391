"""The A/A check's verdicts (issue 25): in each run of benchmarks/aa_models.py's two names for
one workload in one sweep, the second against the first, as `compare` takes it (paired pass
by pass; each run of the command is a sweep of its own since issue 37).

    python3 benchmarks/aa_check.py /tmp/cm_aa/aa.db
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from accelbench.analysis.compare import speedup  # noqa: E402
from accelbench.store.db import Store  # noqa: E402


def main() -> None:
    with Store(sys.argv[1], create=False) as store:
        results = [r for r in store.results() if r.measurement is not None]
    runs: dict[tuple[str, int], dict[str, object]] = {}
    for r in results:
        rounds = r.facts.rounds
        assert rounds is not None
        key = (r.sweep, min(rounds.passes))  # the run's first pass
        runs.setdefault(key, {})[r.spec.workload.removeprefix("seed-cnn-")] = r
    significant = 0
    for key, pair in sorted(runs.items()):
        found = speedup(pair["second"], pair["first"])  # type: ignore[arg-type]
        significant += found.significant
        print(f"{key}: {found.text()} {found.method}")
    print(f"{len(runs) - significant} of {len(runs)} runs: no difference")


if __name__ == "__main__":
    main()
