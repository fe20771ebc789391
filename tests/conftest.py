"""Shared test helpers."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent  # the suite: its data/ and toy plugins
REPO = TESTS.parent


def run_cli(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """Run the real `accelbench` command line in a subprocess."""
    full_env = {**os.environ, **(env or {})}
    full_env.pop("ACCELBENCH_DB", None)
    full_env.pop("ACCELBENCH_DEVICE", None)
    if env:
        full_env.update(env)
    return subprocess.run(
        [sys.executable, "-m", "accelbench", *args],
        capture_output=True,
        text=True,
        env=full_env,
        cwd=cwd,
        timeout=timeout,
    )


# The host's facts a search's costs rest on, injected into a command and its workers (each
# reads its sitecustomize at start): this CPU computes fp16 and bf16 natively. Where it emulates
# them, the search expects ten times fp32 eager's process for either, and whether that fits the
# budget depends on the host's speed and load (the costing itself: test_search.py).
NATIVE_HALF_PRECISION = """
import accelbench.devices.host as host

host.cpu_has_native_bf16 = lambda: True
host.cpu_has_native_fp16 = lambda: True
"""


def native_half_precision_env(folder: Path) -> dict[str, str]:
    """An environment for `run_cli` in which the CPU has fp16 and bf16 instructions, whatever
    this host's: a sitecustomize in `folder`, ahead of the $PYTHONPATH already set."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sitecustomize.py").write_text(NATIVE_HALF_PRECISION)
    path = filter(None, [str(folder), os.environ.get("PYTHONPATH")])
    return {"PYTHONPATH": os.pathsep.join(path)}


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _shared_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder all of this session's xdist workers see (their base temps' parent), or this
    process's own base temp when it runs alone: never one another pytest run shares."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@contextmanager
def one_worker_at_a_time(tmp_path_factory: pytest.TempPathFactory, name: str) -> Iterator[None]:
    """Held by one xdist worker at a time: for what two must not do at once (apt-get)."""
    from filelock import FileLock

    with FileLock(str(_shared_root(tmp_path_factory) / f"{name}.lock")):
        yield


def built_once(
    tmp_path_factory: pytest.TempPathFactory, name: str, build: Callable[[Path], None]
) -> Path:
    """A folder `build` filled, once for the session, whichever xdist workers ask for it: a
    module fixture is otherwise built again on each worker that runs one of its tests. The
    folder is shared: tests read it, or copy out of it what they change."""
    folder = _shared_root(tmp_path_factory) / name
    with one_worker_at_a_time(tmp_path_factory, name):
        if not (folder / ".built").exists():  # a build that failed left no mark: try again
            folder.mkdir(exist_ok=True)
            build(folder)
            (folder / ".built").touch()
    return folder


@pytest.fixture
def cli():
    return run_cli


@pytest.fixture(scope="session")
def measured_db(tmp_path_factory):
    """A database holding one result of mlp measured by the real `run` (one process, no
    verdict probe), made once for the whole suite; it names its database through
    $ACCELBENCH_DB, which test_cli.py checks. Tests that write work on a copy (`copy_of`)."""
    db = tmp_path_factory.mktemp("measured") / "env.db"
    out = run_cli(
        "run", "mlp", "--devices", "cpu", "--blocks", "1", "--no-verdict", "--quiet",
        env={"ACCELBENCH_DB": str(db)},
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    return db


def copy_of(db: Path, where: Path) -> Path:
    """A copy of `db` in the folder `where`, for a test to change or to watch for changes."""
    copied = where / db.name
    shutil.copy(db, copied)
    return copied
