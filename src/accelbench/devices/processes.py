"""Which processes used the CPU over a region: each one's CPU time from /proc/<pid>/stat at the
two ends, so that "other processes used 1 core during the timed samples" can say whose.

A process of our own that is still running (a compiler's worker pool, say) is not in this
process's CPU time (getrusage counts only children that ended), so it is among the others; it
is named as ours, and our ancestors (the CLI that started a worker, its fork server) as such.
Their command lines are kept where they run this same interpreter as this user, since the
process tree proves them ours; no other process's is (it could hold secrets). One that runs our
interpreter outside our tree (a leftover of an earlier run?) is said to, by name only. Where /proc
cannot be read (macOS, Windows) nothing is named.
"""

from __future__ import annotations

import contextlib
import os
import sys
from dataclasses import dataclass
from pathlib import Path

__all__ = ["MIN_CORES", "ProcessTimes", "busiest", "clock_ticks_per_s", "identity", "running"]

PROC = Path("/proc")
MIN_CORES = 0.05  # below this a process's share is the counters' ticking, not work
TOP = 3  # how many processes are named
_COMMAND_CHARS = 80  # of a command line kept


def clock_ticks_per_s() -> float:
    """/proc's unit of CPU time (USER_HZ, 100 on Linux)."""
    return float(os.sysconf("SC_CLK_TCK") if sys.platform != "win32" else 100)


@dataclass(frozen=True)
class _Stat:
    name: str
    parent: int
    cpu_s: float  # user + system
    started: int  # clock ticks after boot: a pid used again is another process


@dataclass(frozen=True)
class ProcessTimes:
    """Every readable process's /proc/<pid>/stat facts, at one moment."""

    stats: dict[int, _Stat]
    ticks_per_s: float = 100.0
    at_ticks: float | None = None  # when it was read, in clock ticks after boot (/proc/uptime)

    @classmethod
    def read(cls, root: Path = PROC, ticks_per_s: float | None = None) -> ProcessTimes:
        """Read `root` (/proc); empty where it does not exist."""
        tick = ticks_per_s or clock_ticks_per_s()
        at = None
        with contextlib.suppress(OSError, ValueError, IndexError):
            at = float((root / "uptime").read_text().split()[0]) * tick
        try:
            entries = [p for p in root.iterdir() if p.name.isdigit()]
        except OSError:
            entries = []
        stats = {}
        for entry in entries:
            with contextlib.suppress(OSError, ValueError, IndexError):  # ended, or not ours
                stats[int(entry.name)] = _parse((entry / "stat").read_bytes(), tick)
        return cls(stats, tick, at)


def identity(pid: int | None = None) -> str:
    """ "HOST PID START": a process, told apart from a later one given the same pid (its start
    in clock ticks after boot, where /proc says it; 0 elsewhere)."""
    import socket

    pid = pid or os.getpid()
    return f"{socket.gethostname()} {pid} {_started(pid)}"


def running(owner: str) -> bool | None:
    """Whether the process `identity` named is running: None when it is another host's (this
    one cannot tell)."""
    import socket

    host, pid, started = owner.rsplit(" ", 2)
    if host != socket.gethostname():
        return None
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's: running, but is it the same process?
        pass
    return _started(int(pid)) == int(started)


def _started(pid: int) -> int:
    with contextlib.suppress(OSError, ValueError, IndexError):
        return _parse((PROC / str(pid) / "stat").read_bytes(), 1.0).started
    return 0


def _parse(raw: bytes, tick: float) -> _Stat:
    """One /proc/<pid>/stat line (proc(5)). The name may hold spaces, parentheses and, cut at
    15 bytes, half a character: it lies between the first " (" and the last ") "."""
    name, _, rest = raw.partition(b" (")[2].rpartition(b") ")
    fields = rest.split()  # from field 3, the state: ppid is field 4, utime 14, stime 15, ...
    cpu = (int(fields[11]) + int(fields[12])) / tick
    return _Stat(name.decode(errors="replace"), int(fields[1]), cpu, int(fields[19]))


def busiest(
    before: ProcessTimes, after: ProcessTimes, seconds: float, us: int, root: Path = PROC
) -> tuple[str, ...]:
    """The processes other than `us` that used the most CPU between the readings, busiest
    first, `TOP` at most and each above the noise (`MIN_CORES`, or a tick at each end over a
    short region): "pid 812 python3 (ours: python3 -m ...): 0.98 cores"."""
    if seconds <= 0:
        return ()
    floor = max(MIN_CORES, 2 / after.ticks_per_s / seconds)
    used = {}
    for pid, now in after.stats.items():
        earlier = _cpu_before(before, pid, now)
        if pid != us and earlier is not None:
            used[pid] = (now.cpu_s - earlier) / seconds
    ranked = sorted((p for p, cores in used.items() if cores >= floor), key=lambda p: -used[p])
    return tuple(_describe(p, used[p], after, us, root) for p in ranked[:TOP])


def _cpu_before(before: ProcessTimes, pid: int, now: _Stat) -> float | None:
    """`pid`'s CPU seconds at the first reading: 0 for a process started since (a pid given
    anew included), None where the first reading missed one already running."""
    then = before.stats.get(pid)
    if then is not None and then.started == now.started:
        return then.cpu_s
    if before.at_ticks is None or now.started >= before.at_ticks:
        return 0.0
    return None  # its whole life's time is not the region's


def _describe(pid: int, cores: float, times: ProcessTimes, us: int, root: Path) -> str:
    stat = times.stats[pid]
    whose, our_python = _relation(pid, us, times.stats), _runs_our_python(pid, root)
    if whose and our_python:
        command = _command(pid, stat.started, root)
        whose += f": {command}" if command else ""
    elif our_python:
        # the same Python as accelbench, outside this run's tree: a leftover of an earlier run?
        whose = "same Python as this run, not started by it"
    return f"pid {pid} {stat.name}{f' ({whose})' if whose else ''}: {cores:.2f} cores"


def _relation(pid: int, us: int, stats: dict[int, _Stat]) -> str:
    if _descends(pid, us, stats):
        return "ours"
    return "our ancestor" if _descends(us, pid, stats) else ""


def _descends(pid: int, ancestor: int, stats: dict[int, _Stat]) -> bool:
    seen = set()
    while pid in stats and pid not in seen:
        seen.add(pid)
        pid = stats[pid].parent
        if pid == ancestor:
            return True
    return False


def _runs_our_python(pid: int, root: Path) -> bool:
    """Whether `pid` runs the executable this process runs (`root`/self), as this user."""
    folder = root / str(pid)
    try:
        mine = os.stat(folder).st_uid == os.getuid()
        exe = os.path.realpath(folder / "exe")
    except (OSError, AttributeError):  # gone; or no getuid (Windows)
        return False
    return mine and exe == os.path.realpath(root / "self" / "exe")


def _command(pid: int, started: int, root: Path) -> str:
    """`pid`'s command line, read, then checked to be the same process still (its pid could
    have been given to another since the reading); "" where it cannot be."""
    folder = root / str(pid)
    try:
        raw = (folder / "cmdline").read_bytes()
        if _parse((folder / "stat").read_bytes(), 1.0).started != started:
            return ""
    except (OSError, ValueError, IndexError):
        return ""
    text = raw.replace(b"\0", b" ").decode(errors="replace").strip()
    return text if len(text) <= _COMMAND_CHARS else text[: _COMMAND_CHARS - 3] + "..."
