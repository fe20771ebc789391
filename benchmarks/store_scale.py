"""The results store at scale, SQLite against PostgreSQL in one run (issue 34): how long
`accelbench results` (the table) and `results --json` take on 100,000 results and
`accelbench report` on 10,000, and how many results a second 8 processes saving at once store.

Every synthetic result is a copy of one real one (measured here by a tiny `accelbench run`, or
taken from --from DB) with its own uid and time. PostgreSQL is a throwaway cluster on this
machine, started the way the tests start theirs (tests/store/conftest.py: PostgreSQL 15's
initdb and pg_ctl on PATH, fsync off).

    PYTHONPATH=src python3 benchmarks/store_scale.py                 # 100,000 / 10,000 / 8 x 250
    PYTHONPATH=src python3 benchmarks/store_scale.py --results 2000 --report 500 --writes 20
    PYTHONPATH=src python3 benchmarks/store_scale.py --fetch-only   # reading 100,000 rows only

Prints one line per figure, and their JSON at the end. The commands are timed end to end, as a
user waits for them (interpreter start, reading, rendering; output to /dev/null), best of
--repeats.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))

from accelbench.core.result import Result  # noqa: E402
from accelbench.store.db import Store  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=int, default=100_000, help="results `results` lists")
    parser.add_argument("--report", type=int, default=10_000, help="results `report` reads")
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--writes", type=int, default=250, help="results each writer saves")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--from", dest="source", help="a store holding a real result to copy")
    parser.add_argument("--no-json-listing", action="store_true",
                        help="skip `results --json` (every result: minutes at 100,000)")
    parser.add_argument("--fetch-only", action="store_true",
                        help="fill, then time reading the rows only (no commands, no writers)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="accelbench-scale-") as scratch:
        work = Path(scratch)
        seed = real_result(args.source, work)
        from tests.store.conftest import _start_cluster

        folder = Path(tempfile.mkdtemp(prefix="accelbench-pg-"))
        cluster = _start_cluster(folder)
        try:
            sqlite = [str(work / f"{use}.db") for use in ("results", "report", "writers")]
            postgres = [cluster.url(cluster.database()) for _ in range(3)]
            figures = {"sqlite": measure(args, seed, sqlite),
                       "postgres": measure(args, seed, postgres)}  # fmt: skip
        finally:
            cluster.pg_ctl("-m", "fast", "stop")
            shutil.rmtree(folder, ignore_errors=True)
    print(json.dumps(figures, indent=1))


def real_result(source: str | None, work: Path) -> Result:
    if source is None:
        source = str(work / "seed.db")
        command = [sys.executable, "-m", "accelbench", "run", "mlp", "--devices", "cpu",
                   "--blocks", "2", "--no-verdict", "--no-latency", "--quiet", "--db", source]
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL, env=_env())
    with Store(source, create=False) as store:
        found = [r for r in store.results(limit=50) if r.measurement is not None]
    if not found:
        sys.exit(f"{source} holds no measured result to copy")
    return found[0]


def copies(seed: Result, count: int, start: int = 0) -> list[Result]:
    """`count` copies of `seed`, each its own result: a new uid, a time a second apart, one
    of 50 batch sizes (as benchmarks/ten_thousand.py, so a report has 50 configurations)."""
    base = datetime(2026, 1, 1, tzinfo=timezone.utc)
    return [replace(seed, id=None, uid=f"scale-{start + n:09d}",
                    spec=replace(seed.spec, batch_size=64 + (start + n) % 50),
                    created_at=(base + timedelta(seconds=start + n)).isoformat())
            for n in range(count)]  # fmt: skip


def measure(args: argparse.Namespace, seed: Result, locations: list[str]) -> dict[str, float]:
    listed, reported, written = locations
    backend = "postgres" if listed.startswith("postgresql") else "sqlite"
    figures: dict[str, float] = {}
    started = time.perf_counter()
    with Store(listed) as store:
        for first in range(0, args.results, 10_000):
            store.import_results(copies(seed, min(10_000, args.results - first), first))
    figures["fill_per_s"] = args.results / (time.perf_counter() - started)
    with Store(listed, create=False) as store:
        started = time.perf_counter()
        rows = store._conn.execute("SELECT * FROM results ORDER BY id DESC").fetchall()
        figures[f"fetch_{len(rows)}_rows_s"] = time.perf_counter() - started  # SQL and driver
        started = time.perf_counter()
        read = len(store.results())  # the rows again, each made a checked Result
        figures[f"read_{read}_results_s"] = time.perf_counter() - started
    if args.fetch_only:
        return _said(figures, backend)
    # the listing a user types (the newest 50, with their history), then every result as JSON
    figures.update(_timed(args, ["results"], listed, f"results_table_{args.results}"))
    if not args.no_json_listing:
        figures.update(_timed(args, ["results", "--json"], listed, f"results_{args.results}"))
    with Store(reported) as store:
        store.import_results(copies(seed, args.report))
    figures.update(_timed(args, ["report", "--out", os.devnull], reported,
                          f"report_{args.report}"))  # fmt: skip
    figures["writers_results_per_s"] = writers(args, seed, written)
    return _said(figures, backend)


def _said(figures: dict[str, float], backend: str) -> dict[str, float]:
    for name, value in figures.items():
        print(f"{backend}: {name} = {value:,.2f}", flush=True)
    return figures


def _timed(args: argparse.Namespace, command: list[str], db: str, name: str) -> dict[str, float]:
    times = []
    for _ in range(args.repeats):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "accelbench", *command, "--db", db], check=True,
                       stdout=subprocess.DEVNULL, env=_env())  # fmt: skip
        times.append(time.perf_counter() - started)
    return {f"{name}_s": min(times), f"{name}_s_max": max(times)}


def _write(location: str, seed: Result, count: int, start: int) -> None:
    with Store(location) as store:
        for result in copies(seed, count, start):
            store.save(result)  # each its own transaction, as a run saves


def writers(args: argparse.Namespace, seed: Result, location: str) -> float:
    """Results a second `args.writers` processes store, each saving `args.writes` at once."""
    Store(location).close()  # the schema made before the clock starts
    context = multiprocessing.get_context("spawn")
    jobs = [(location, seed, args.writes, 1_000_000 * (n + 1)) for n in range(args.writers)]
    started = time.perf_counter()
    with context.Pool(args.writers) as pool:
        pool.starmap(_write, jobs)
    elapsed = time.perf_counter() - started
    with Store(location, create=False) as store:
        stored = len({r.uid for r in store.results()} & {
            r.uid for job in jobs for r in copies(seed, job[2], job[3])})  # fmt: skip
    if stored != args.writers * args.writes:
        sys.exit(f"{location}: {stored} of {args.writers * args.writes} results stored")
    return stored / elapsed


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "ACCELBENCH_DB"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")])
    return env


if __name__ == "__main__":
    main()
