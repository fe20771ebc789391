"""The device layer's vocabulary, without torch: kinds, preference, the baseline, OOM messages.

Commands that only read the store (compare, report, list) need to know which device is the
comparison baseline, or whether a stored error means "out of memory", without paying for
importing torch; this module is what they import.
"""

from __future__ import annotations

__all__ = [
    "BASELINE_DEVICE",
    "HOST_DEVICE",
    "KINDS",
    "PREFERENCE",
    "is_baseline",
    "mentions_out_of_memory",
]

# Order in which pick_device() prefers an available device; every kind accelbench knows.
PREFERENCE = ("cuda", "mps", "xpu", "cpu")
KINDS = tuple(sorted(PREFERENCE))

HOST_DEVICE = "cpu"  # the host CPU's name, and its kind: there is one on every machine
# Speedups are "vs CPU": the one device every machine has, so every comparison has a baseline.
BASELINE_DEVICE = HOST_DEVICE

# How running out of memory reads in a stored error when it was not a torch OutOfMemoryError:
# CPU allocators raise RuntimeErrors with these words, and the kernel's OOM killer sends SIGKILL.
_OUT_OF_MEMORY_WORDS = ("out of memory", "can't allocate memory", "not enough memory", "SIGKILL")


def is_baseline(device_name: str) -> bool:
    """Whether `device_name` is the device others are compared with."""
    return device_name == BASELINE_DEVICE


def mentions_out_of_memory(message: str) -> bool:
    """Whether an error message says that memory ran out (on any device, by any allocator)."""
    return any(word in message for word in _OUT_OF_MEMORY_WORDS)
