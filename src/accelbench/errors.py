"""The one exception tree of accelbench.

Everything the user can cause (a bad name, a bad number, an unreadable file) raises a subclass of
`AccelbenchError` with a message that fits on one line and names the valid choices. The CLI turns
it into that line on stderr and exit code 2; anything else reaching the user is a bug.
"""

from __future__ import annotations

__all__ = [
    "AccelbenchError",
    "DeviceError",
    "StoreError",
    "UsageError",
    "WorkloadError",
    "one_line",
]


class AccelbenchError(Exception):
    """Base of every error accelbench raises on purpose."""


class UsageError(AccelbenchError):
    """A bad option value or combination of options."""


class DeviceError(AccelbenchError):
    """An unknown device name, or a device that is not available here."""


class WorkloadError(AccelbenchError):
    """An unknown workload, or one that cannot be built."""


class StoreError(AccelbenchError):
    """The results database cannot be opened, is not accelbench's, or is too new."""


def one_line(exc: BaseException) -> str:
    """An exception as one line: its type and the first line of its message."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".rstrip(": ")
