"""Which processes used the CPU over a region: each one's CPU time from /proc/<pid>/stat at the
two ends, so that "other processes used 1 core during the timed samples" can say whose.

A process of our own that is still running (a compiler's worker pool, say) is not in this
process's CPU time (getrusage counts only children that ended), so it is among the others and is
named as ours. Only our own processes' command lines are kept: another user's could hold secrets.
Where /proc cannot be read (macOS, Windows) nothing is named.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

__all__ = ["ProcessTimes", "busiest"]

PROC = Path("/proc")
MIN_CORES = 0.05  # below this a process's share is the counters' ticking, not work
TOP = 3  # how many processes are named
_COMMAND_CHARS = 80  # of a command line of ours


@dataclass(frozen=True)
class ProcessTimes:
    """Every readable process's CPU seconds (user + system), name and parent, at one moment."""

    cpu_s: dict[int, float]
    names: dict[int, str]
    parents: dict[int, int]

    @classmethod
    def read(cls, root: Path = PROC, ticks_per_s: float | None = None) -> ProcessTimes:
        """Read `root` (/proc); empty where it does not exist."""
        tick = ticks_per_s or float(os.sysconf("SC_CLK_TCK") if sys.platform != "win32" else 100)
        cpu, names, parents = {}, {}, {}
        try:
            entries = [p for p in root.iterdir() if p.name.isdigit()]
        except OSError:
            entries = []
        for entry in entries:
            try:
                stat = (entry / "stat").read_text()
            except OSError:  # ended since, or not ours to read
                continue
            name, _, rest = stat.partition(" (")[2].rpartition(") ")
            fields = rest.split()
            if len(fields) < 13:
                continue
            pid = int(entry.name)
            # after the name: state, ppid, ... utime and stime are the 12th and 13th (stat(5))
            cpu[pid] = (int(fields[11]) + int(fields[12])) / tick
            names[pid], parents[pid] = name, int(fields[1])
        return cls(cpu, names, parents)


def busiest(
    before: ProcessTimes, after: ProcessTimes, seconds: float, us: int, root: Path = PROC
) -> tuple[str, ...]:
    """The processes other than `us` that used the most CPU between the readings, busiest
    first, `TOP` at most and each above `MIN_CORES`: "pid 812 python3 (ours: python3 -m ...):
    0.98 cores"."""
    if seconds <= 0:
        return ()
    used = {
        pid: (after.cpu_s[pid] - before.cpu_s.get(pid, 0.0)) / seconds
        for pid in after.cpu_s
        if pid != us
    }
    ranked = sorted((p for p, cores in used.items() if cores >= MIN_CORES), key=lambda p: -used[p])
    return tuple(_describe(p, used[p], after, us, root) for p in ranked[:TOP])


def _describe(pid: int, cores: float, times: ProcessTimes, us: int, root: Path) -> str:
    whose = f" (ours: {_command(pid, root)})" if _descends(pid, us, times.parents) else ""
    return f"pid {pid} {times.names[pid]}{whose}: {cores:.2f} cores"


def _descends(pid: int, ancestor: int, parents: dict[int, int]) -> bool:
    seen = set()
    while pid in parents and pid not in seen:
        seen.add(pid)
        pid = parents[pid]
        if pid == ancestor:
            return True
    return False


def _command(pid: int, root: Path) -> str:
    try:
        raw = (root / str(pid) / "cmdline").read_bytes()
    except OSError:
        return "a process of this one"
    text = raw.replace(b"\0", b" ").decode(errors="replace").strip()
    if len(text) > _COMMAND_CHARS:
        text = text[: _COMMAND_CHARS - 3] + "..."
    return text or "a process of this one"
