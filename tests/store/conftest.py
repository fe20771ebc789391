"""A real PostgreSQL server for the store's tests: one throwaway cluster per test session, in a
temporary folder (PostgreSQL 15's `initdb` and `pg_ctl` from PATH, else the binaries the
`pgserver` package carries; as root they run as the `postgres` user, since initdb refuses root),
and one fresh database per test.

Roles: `postgres` (superuser, trusted on 127.0.0.1), `writer` (password, scram-sha-256; owns
the databases it is given) and `reader` (password; may only SELECT)."""

from __future__ import annotations

import contextlib
import itertools
import os
import shlex
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

WRITER_PASSWORD = "wr1te-S3cret:pw"  # a ':' inside, so the URL must carry it encoded
READER_PASSWORD = "re4d-S3cret"
_HBA = """\
local all all trust
host all writer 127.0.0.1/32 scram-sha-256
host all reader 127.0.0.1/32 scram-sha-256
host all all 127.0.0.1/32 trust
"""


@dataclass
class Cluster:
    """A running throwaway PostgreSQL cluster."""

    folder: Path
    port: int
    as_owner: list[str]  # the command prefix that runs a binary as the cluster's owner
    bin: str = ""  # the folder of initdb and pg_ctl; "" for those on PATH
    _names: Iterator[int] = field(default_factory=itertools.count)

    def url(self, db: str, user: str = "postgres", password: str | None = None,
            query: str = "") -> str:  # fmt: skip
        from urllib.parse import quote

        auth = user if password is None else f"{user}:{quote(password, safe='')}"
        return f"postgresql://{auth}@127.0.0.1:{self.port}/{db}" + (f"?{query}" if query else "")

    def sql(self, statement: str, db: str = "postgres") -> list[tuple[object, ...]]:
        import psycopg

        with psycopg.connect(self.url(db), autocommit=True) as conn:
            cursor = conn.execute(statement)
            return cursor.fetchall() if cursor.description else []

    def database(self, owner: str = "postgres") -> str:
        """A new empty database, with the reader allowed to read what its owner creates."""
        name = f"t{os.getpid()}_{next(self._names)}"
        self.sql(f"CREATE DATABASE {name} OWNER {owner}")
        self.sql(f"ALTER DEFAULT PRIVILEGES FOR ROLE {owner} IN SCHEMA public "
                 "GRANT SELECT ON TABLES TO reader", db=name)  # fmt: skip
        return name

    def pg_ctl(self, *args: str) -> None:
        self._run(["pg_ctl", "-D", str(self.folder / "data"), "-w", *args])

    def stop(self) -> None:
        """Stop at once, as a crash would (no checkpoint): the next start recovers."""
        self.pg_ctl("-m", "immediate", "stop")

    def start(self) -> None:
        options = (f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 "
                   "-c fsync=off -c max_connections=60")  # fmt: skip
        self.pg_ctl("-o", options, "-l", str(self.folder / "log"), "start")

    def _run(self, command: list[str]) -> None:
        if self.bin:
            command = [os.path.join(self.bin, command[0]), *command[1:]]
        full = [*self.as_owner, shlex.join(command)] if self.as_owner else command
        done = subprocess.run(full, capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            raise RuntimeError(f"{shlex.join(command)} failed: {done.stderr or done.stdout}")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _pgserver_bin(folder: Path) -> str | None:
    """The binaries the `pgserver` package carries (for machines without PostgreSQL's own),
    copied into `folder` so that the `postgres` user can run them; None without the package."""
    import importlib.util

    found = importlib.util.find_spec("pgserver")
    if found is None or found.origin is None:
        return None
    package = Path(found.origin).parent
    # the binaries find their libraries beside the package (RPATH $ORIGIN/../../../pgserver.libs)
    for part in ("pgserver/pginstall", "pgserver.libs"):
        shutil.copytree(package.parent / part, folder / "pg" / part, symlinks=True)
    return str(folder / "pg" / "pgserver" / "pginstall" / "bin")


def _start_cluster(folder: Path, bin: str) -> Cluster:
    # root may not run the server: the binaries run as the `postgres` user, in a folder it owns
    as_owner = ["su", "postgres", "-s", "/bin/sh", "-c"] if os.geteuid() == 0 else []
    if as_owner:
        for path in [folder, *folder.rglob("*")]:
            shutil.chown(path, "postgres")
    cluster = Cluster(folder, _free_port(), as_owner, bin)
    cluster._run(["initdb", "-D", str(folder / "data"), "-A", "trust", "-U", "postgres",
                  "-E", "UTF8", "--no-sync"])  # fmt: skip
    (folder / "data" / "pg_hba.conf").write_text(_HBA)
    cluster.start()
    cluster.sql(f"CREATE ROLE writer LOGIN PASSWORD '{WRITER_PASSWORD}'")
    cluster.sql(f"CREATE ROLE reader LOGIN PASSWORD '{READER_PASSWORD}'")
    return cluster


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[Cluster]:
    """The session's cluster, stopped and removed at its end; skipped, with the reason, where
    psycopg is missing, or both PostgreSQL's binaries and the pgserver package."""
    pytest.importorskip("psycopg", reason="psycopg is not installed (accelbench[postgres])")
    folder = Path(tempfile.mkdtemp(prefix="accelbench-pg-"))  # short: the socket's path fits
    try:
        on_path = all(shutil.which(b) for b in ("initdb", "pg_ctl"))
        bin = "" if on_path else _pgserver_bin(folder)
        if bin is None:
            pytest.skip("no PostgreSQL server to test: initdb and pg_ctl are not on PATH, and "
                        "the pgserver package that carries them is not installed")  # fmt: skip
        cluster = _start_cluster(folder, bin)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    try:
        yield cluster
    finally:
        with contextlib.suppress(RuntimeError):  # already stopped by a test that failed
            cluster.stop()  # at once: the cluster is thrown away
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def pg_url(pg_cluster: Cluster) -> str:
    """A fresh, empty database on the session's cluster, as the superuser's URL."""
    return pg_cluster.url(pg_cluster.database())


@pytest.fixture(params=["sqlite", "postgres"])
def location(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A new store's location on each backend: an SQLite file, a PostgreSQL database."""
    if request.param == "sqlite":
        return str(tmp_path / "r.db")
    url: str = request.getfixturevalue("pg_url")
    return url
