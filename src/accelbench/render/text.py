"""Figures as text, the same in every renderer: sizes, durations, rates."""

from __future__ import annotations

from ..core.stats import Summary

__all__ = ["format_bytes", "format_seconds", "interval", "number"]


def format_bytes(n: int | None) -> str:
    if n is None:
        return "—"
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def format_seconds(s: float) -> str:
    if s >= 1:
        return f"{s:.3f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.3f} ms"
    return f"{s * 1e6:.1f} µs"


def number(x: float) -> str:
    """Enough digits to compare two figures, no more."""
    magnitude = abs(x)
    if magnitude >= 100:
        return f"{x:,.0f}"
    if magnitude >= 10:
        return f"{x:.1f}"
    if magnitude >= 1:
        return f"{x:.2f}"
    return f"{x:.3g}"


def interval(summary: Summary) -> str:
    """A summary's 95% CI as 'low–high', or 'n/a' when too few samples give none."""
    if summary.ci_low is None or summary.ci_high is None:
        return "n/a"
    return f"{number(summary.ci_low)}–{number(summary.ci_high)}"
