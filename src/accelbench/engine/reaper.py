"""Nothing a configuration started outlives it.

The worker leads its own process group, and ending the group ends what it started. A process
that left the group (a model whose forward forks a child that calls setsid, a daemon) escapes
that. So while a worker runs, this process is a child subreaper (Linux's
PR_SET_CHILD_SUBREAPER): a descendant orphaned by its parent's end becomes our child instead
of init's. Once the worker has ended, every child we did not have before it started and that
is outside our session (the worker left our session at its start, and all it started with
it) is such an orphan; each is stopped with its own group, and again for what their end
orphans in turn. A child of our own (a library caller's subprocess) stays in our session and
is left alone.

Where the kernel has no subreaper (macOS, Windows), only the group is ended, as before.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import time
from types import TracebackType

from ..analysis.facts import UNCHECKED
from ..devices.processes import ProcessTimes
from ..errors import one_line

__all__ = ["Reaper"]

_PR_SET_CHILD_SUBREAPER, _PR_GET_CHILD_SUBREAPER = 36, 37  # linux/prctl.h
_ROUNDS = 20  # an orphan's end may orphan its own children: sweep again, this many times
_SETTLE_S = 0.05  # for the kernel to reparent what a killed process left


class Reaper:
    """Around one worker: afterwards `stopped` names what it left running and was stopped,
    or (beginning UNCHECKED) why the look for it failed. It never raises on the way out: the
    worker's result, measured by then, must not be lost to the clean-up after it."""

    def __init__(self) -> None:
        self.stopped: list[str] = []
        self._before: set[int] = set()
        self._was: int | None = None

    def __enter__(self) -> Reaper:
        self._was = _subreaper(True)
        self._before = set(_children())
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._was is None:
            return
        try:
            self._sweep()
        except Exception as exc:  # a faked clock's sleep, an odd /proc: said with the result
            self.stopped.append(f"{UNCHECKED}{one_line(exc)}")
        finally:
            _subreaper(bool(self._was))

    def _sweep(self) -> None:
        for _ in range(_ROUNDS):
            time.sleep(_SETTLE_S)
            left = {pid: name for pid, name in _children().items() if pid not in self._before}
            if not left:
                return
            for pid, name in left.items():
                self.stopped.append(f"pid {pid} {name}")
                _stop(pid)


def _subreaper(on: bool) -> int | None:
    """Make this process a child subreaper or not; what it was, or None where it cannot be."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        was = ctypes.c_int(0)
        if libc.prctl(_PR_GET_CHILD_SUBREAPER, ctypes.byref(was), 0, 0, 0) != 0:
            return None
        if libc.prctl(_PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0) != 0:
            return None
    except (OSError, AttributeError):
        return None
    return was.value


def _children() -> dict[int, str]:
    """This process's children outside its session, by pid, with their names."""
    me, session = os.getpid(), os.getsid(0)
    return {
        pid: s.name
        for pid, s in ProcessTimes.read().stats.items()
        if s.parent == me and _session(pid) not in (session, None)
    }


def _session(pid: int) -> int | None:
    try:
        return os.getsid(pid)
    except (ProcessLookupError, PermissionError):
        return None


def _stop(pid: int) -> None:
    """End an orphan and its group (it may lead one of its own), and reap it."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        group = os.getpgid(pid)
        if group == pid:
            os.killpg(group, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, 0)
