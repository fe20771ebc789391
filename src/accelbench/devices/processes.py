"""Which processes used the CPU over a region: each one's CPU time from /proc/<pid>/stat at the
two ends, so that "other processes used 1 core during the timed samples" can say whose.

A process of our own that is still running (a compiler's worker pool, say) is not in this
process's CPU time (getrusage counts only children that ended), so it is among the others; it
is named as ours, and our ancestors (the CLI that started a worker, its fork server) as such.
A command line is kept only for a process that runs this very interpreter as this user (ours,
an ancestor, or one left over from an earlier run): anyone else's could hold secrets. Where
/proc cannot be read (macOS, Windows) nothing is named.
"""

from __future__ import annotations

import contextlib
import os
import sys
from dataclasses import dataclass
from pathlib import Path

__all__ = ["ProcessTimes", "busiest"]

PROC = Path("/proc")
MIN_CORES = 0.05  # below this a process's share is the counters' ticking, not work
TOP = 3  # how many processes are named
_COMMAND_CHARS = 80  # of a command line kept


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

    @classmethod
    def read(cls, root: Path = PROC, ticks_per_s: float | None = None) -> ProcessTimes:
        """Read `root` (/proc); empty where it does not exist."""
        tick = ticks_per_s or float(os.sysconf("SC_CLK_TCK") if sys.platform != "win32" else 100)
        try:
            entries = [p for p in root.iterdir() if p.name.isdigit()]
        except OSError:
            entries = []
        stats = {}
        for entry in entries:
            with contextlib.suppress(OSError, ValueError, IndexError):  # ended, or not ours
                stats[int(entry.name)] = _parse((entry / "stat").read_bytes(), tick)
        return cls(stats)


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
    first, `TOP` at most and each above `MIN_CORES`: "pid 812 python3 (ours: python3 -m ...):
    0.98 cores". A process that started in between counts all its time."""
    if seconds <= 0:
        return ()
    used = {}
    for pid, now in after.stats.items():
        then = before.stats.get(pid)
        earlier = then.cpu_s if then is not None and then.started == now.started else 0.0
        if pid != us:
            used[pid] = (now.cpu_s - earlier) / seconds
    ranked = sorted((p for p, cores in used.items() if cores >= MIN_CORES), key=lambda p: -used[p])
    return tuple(_describe(p, used[p], after, us, root) for p in ranked[:TOP])


def _describe(pid: int, cores: float, times: ProcessTimes, us: int, root: Path) -> str:
    stats = times.stats
    if _descends(pid, us, stats):
        whose = "ours"
    elif _descends(us, pid, stats):
        whose = "our ancestor"
    else:
        whose = "this Python's"  # said only where it runs our interpreter: a leftover?
    command = _own_command(pid, stats[pid].started, root)
    note = f" ({whose}: {command})" if command else (" (ours)" if whose == "ours" else "")
    return f"pid {pid} {stats[pid].name}{note}: {cores:.2f} cores"


def _descends(pid: int, ancestor: int, stats: dict[int, _Stat]) -> bool:
    seen = set()
    while pid in stats and pid not in seen:
        seen.add(pid)
        pid = stats[pid].parent
        if pid == ancestor:
            return True
    return False


def _own_command(pid: int, started: int, root: Path) -> str:
    """The command line of `pid` if it runs this interpreter as this user, else ""; read, then
    checked to be the same process still (its pid could have been given to another)."""
    folder = root / str(pid)
    try:
        same = os.stat(folder).st_uid == os.getuid() and _same_program(folder, root)
        raw = (folder / "cmdline").read_bytes() if same else b""
        if raw and _parse((folder / "stat").read_bytes(), 1.0).started != started:
            return ""
    except (OSError, ValueError, IndexError, AttributeError):  # gone; or no getuid (Windows)
        return ""
    text = raw.replace(b"\0", b" ").decode(errors="replace").strip()
    return text if len(text) <= _COMMAND_CHARS else text[: _COMMAND_CHARS - 3] + "..."


def _same_program(folder: Path, root: Path) -> bool:
    """Whether the process runs the executable this one runs (`root`/self is this process)."""
    return os.path.realpath(folder / "exe") == os.path.realpath(root / "self" / "exe")
