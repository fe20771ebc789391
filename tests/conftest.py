"""Shared test helpers."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
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


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def cli():
    return run_cli
