"""Text as every renderer shows it: figures (sizes, durations, rates), and stored strings made
inert (no control character reaches a terminal, a table or a chart)."""

from __future__ import annotations

import re

from ..core.stats import Summary

__all__ = ["format_bytes", "format_seconds", "inert", "interval", "number"]

# Characters that act instead of showing: C0 and C1 controls (ESC starts ANSI and OSC sequences;
# CR and LF break table rows), DEL, the invisible format characters (soft hyphen, zero-widths,
# bidirectional overrides that reorder what a reader sees, BOM, tag characters), line and
# paragraph separators, and lone surrogates (JSON can carry them; printing one raises).
_ACTIVE = re.compile(
    "[\x00-\x1f\x7f-\x9f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e"
    "\u2060-\u206f\ufeff\ufff9-\ufffb\ud800-\udfff\U000e0000-\U000e007f]"
)


def inert(text: object) -> str:
    """`text` with each active character above written as its Python escape, visibly:
    ESC becomes the four characters `\\x1b`, a newline `\\n`, U+202E `\\u202e`.

    Everything else, backslashes and non-ASCII letters included, is kept as it is. Markup
    (rich's `[...]`, matplotlib's `$...$`, Markdown's `|`) is not this function's business: each
    renderer escapes its own.
    """
    return _ACTIVE.sub(lambda found: ascii(found.group())[1:-1], str(text))


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


def interval(summary: Summary, scale: float = 1.0) -> str:
    """A summary's 95% CI as 'low–high' (times `scale`: its/s to samples/s), or 'n/a' when too
    few samples give none."""
    if summary.ci_low is None or summary.ci_high is None:
        return "n/a"
    return f"{number(summary.ci_low * scale)}–{number(summary.ci_high * scale)}"
