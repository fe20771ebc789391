"""The fork server that workers start from (Linux), started on its own without importing torch.

Its imports (torch, the runner) take seconds. Started here, as the command begins, they run
beside the parent's own imports instead of after them: `run --quick` ends that much sooner.
This module imports nothing heavy, so the command can start the server before loading the rest.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import threading
from typing import Any

from ..errors import UsageError
from ..levers import NO_ENTRY_POINTS, PLUGINS

__all__ = ["PRELOAD", "START", "STARTS", "context", "start_early", "start_method"]

START = "ACCELBENCH_START"  # "spawn" forces a fresh interpreter per worker (debugging, comparing)
STARTS = ("forkserver", "spawn")
# What the fork server imports once. Nothing here may initialize CUDA or MPS or start threads
# at import (a test checks): a fork copies only the forking thread, and a device context does
# not survive a fork. numpy's OpenBLAS pool is the one exception; it stops itself around forks.
# torch._dynamo too: importing it is most of torch.compile's setup (4 s a variant on a 2-core
# CPU), and it starts no thread and touches no device at import.
PRELOAD = (
    "torch",
    "torch._dynamo",
    "accelbench.engine.runner",
    "accelbench.analysis.drift",
    "accelbench.cli.main",
)
_SERVER_LOCK = threading.Lock()


def start_method() -> str:
    """How workers start here: "forkserver" on Linux unless ACCELBENCH_START says "spawn"."""
    asked = os.environ.get(START, "").strip().lower()
    if asked and asked not in STARTS:
        raise UsageError(f"${START} is {asked!r}; use one of {', '.join(STARTS)}")
    if asked == "spawn" or not sys.platform.startswith("linux"):
        return "spawn"  # fork is unsafe on macOS (system frameworks), absent on Windows
    return "forkserver"


def context() -> Any:
    """The multiprocessing context for the next worker, with its fork server running."""
    method = start_method()
    found = multiprocessing.get_context(method)
    if method == "forkserver":
        _start_server(found)
    return found


def start_early() -> None:
    """Start the fork server now, if workers will fork from one, so that its imports overlap
    the command's own. A bad $ACCELBENCH_START is left for the worker's start to report."""
    try:
        context()
    except UsageError:
        return


def _start_server(found: Any) -> None:
    """Start this process's fork server the first time (and again should it have died).

    It starts without plugins ($ACCELBENCH_LEVERS, installed entry points): plugin code is not
    ours to vouch for (it could start a thread or touch a device at import, and a plugin that
    fails to load would take the server down), and every worker loads the plugins now anyway."""
    from multiprocessing import forkserver

    with _SERVER_LOCK:
        found.set_forkserver_preload(list(PRELOAD))
        plugins = os.environ.pop(PLUGINS, None)
        os.environ[NO_ENTRY_POINTS] = "1"
        try:
            forkserver.ensure_running()  # a cheap check once it runs
        finally:
            os.environ.pop(NO_ENTRY_POINTS, None)
            if plugins is not None:
                os.environ[PLUGINS] = plugins
