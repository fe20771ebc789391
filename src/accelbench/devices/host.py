"""Facts read from the host's operating system, without torch: CPU name and flags, memory.

The CPU and MPS backends describe their devices with them, and the environment fingerprint names
the CPU; none of it needs torch, so reading it costs no torch import.
"""

from __future__ import annotations

import contextlib
import os
import platform
import subprocess
import sys

__all__ = [
    "cpu_has_native_bf16",
    "cpu_has_native_fp16",
    "cpu_model",
    "macos_major",
    "peak_rss_resettable",
    "physical_memory",
    "proc_status_bytes",
    "usable_cores",
]


def cpu_model() -> str:
    """The CPU's marketing name, from the OS."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError), open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    if sys.platform == "darwin":
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            out = subprocess.run(
                ["sysctl", "-n", "machdep.cpu.brand_string"],
                capture_output=True,
                text=True,
                timeout=5,
                check=True,
            )
            return out.stdout.strip()
    return platform.processor() or platform.machine()


def _cpu_flags() -> set[str]:
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    return set()


def cpu_has_native_bf16() -> bool:
    """Whether the CPU has bf16 instructions (without them PyTorch emulates bf16, slowly)."""
    if platform.machine() == "arm64" and sys.platform == "darwin":
        return True  # Apple M2 and later have bf16 instructions; M1 emulates (close enough here)
    return bool(_cpu_flags() & {"avx512_bf16", "amx_bf16", "bf16"})


def cpu_has_native_fp16() -> bool:
    """Whether the CPU has fp16 arithmetic (AVX512-FP16, AMX-FP16; Arm's is in every Apple
    core): without it PyTorch computes fp16 through conversions, far slower than fp32."""
    if platform.machine() in ("arm64", "aarch64"):
        return "fphp" in _cpu_flags() or sys.platform == "darwin"
    return bool(_cpu_flags() & {"avx512_fp16", "amx_fp16"})


def usable_cores() -> int:
    """The CPU cores this process may run on: its affinity where the OS has one (a container
    or `taskset` narrows it), else every core the OS counts; 0 where it does not say."""
    affinity = getattr(os, "sched_getaffinity", None)
    if affinity is not None:
        with contextlib.suppress(OSError):
            return len(affinity(0))
    return os.cpu_count() or 0


def physical_memory() -> int | None:
    """The machine's RAM in bytes, or None where the OS does not say."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def proc_status_bytes(key: str) -> int | None:
    """A memory figure of this process from Linux's /proc/self/status (e.g. VmHWM), in bytes."""
    with contextlib.suppress(OSError), open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024  # reported in kB
    return None


def seconds_since_start() -> float | None:
    """Wall seconds since this process began (its interpreter's start included), from Linux's
    /proc/self/stat and /proc/uptime; None where the OS does not say."""
    try:
        with open("/proc/self/stat") as stat, open("/proc/uptime") as uptime:
            return since_start(stat.read(), uptime.read(), os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError, AttributeError):
        return None


def since_start(stat: str, uptime: str, ticks_per_s: int) -> float:
    """Seconds from a process's start (field 22 of its /proc/PID/stat, in clock ticks after
    boot) to `uptime` (the first figure of /proc/uptime, in seconds after boot)."""
    # The name (field 2) is in parentheses and may hold spaces: count fields after it.
    after_name = stat.rsplit(")", 1)[1].split()
    started_s = int(after_name[22 - 3]) / ticks_per_s
    return max(0.0, float(uptime.split()[0]) - started_s)


def peak_rss_resettable() -> bool:
    """Whether Linux lets this process reset its peak RSS (VmHWM)."""
    return os.access("/proc/self/clear_refs", os.W_OK)


def macos_major() -> int:
    """The macOS major version (14 for Sonoma), 0 elsewhere."""
    version = platform.mac_ver()[0]
    return int(version.split(".")[0]) if version else 0
