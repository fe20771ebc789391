"""Text as every renderer shows it: figures (sizes, durations, rates), and stored strings made
inert (no control character reaches a terminal, a table or a chart)."""

from __future__ import annotations

import codecs
import re
import sys
from collections.abc import Iterable
from contextvars import ContextVar

from ..core.stats import Summary

__all__ = [
    "OUTPUT_ENCODING",
    "encodable",
    "output_encoding",
    "format_bytes",
    "format_seconds",
    "inert",
    "interval",
    "number",
    "short_names",
]

# The encoding of where the text goes; None: standard output's. A table for an ASCII-only
# terminal (`PYTHONIOENCODING=ascii`, a C locale) gets ASCII borders and escapes, so its columns
# line up and writing it cannot fail
OUTPUT_ENCODING: ContextVar[str | None] = ContextVar("OUTPUT_ENCODING", default=None)

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


def output_encoding() -> str:
    """OUTPUT_ENCODING, else standard output's encoding, by its canonical name ("ascii" for
    "ANSI_X3.4-1968"); utf-8 where neither names one Python knows."""
    chosen = OUTPUT_ENCODING.get() or getattr(sys.stdout, "encoding", None) or "utf-8"
    try:
        return codecs.lookup(chosen).name
    except LookupError:
        return "utf-8"


def encodable(text: str) -> str:
    """`text` with each character the output's encoding lacks written as its Python escape
    (`mod\\xe8le`); unchanged where it has them all."""
    encoding = output_encoding()
    try:
        text.encode(encoding)
    except UnicodeEncodeError:
        return text.encode(encoding, "backslashreplace").decode(encoding)
    return text


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


def short_names(names: Iterable[str]) -> dict[str, str]:
    """Each name as a narrow column shows it: a path (`--model DIR/cnn.py:make_cnn`) by the
    fewest trailing parts that no other name ends with, after "…/"; any other name whole. Two
    names never read alike (`…/cnn.py:make_cnn`, `…/vit.py:make_vit`), and nothing is cut
    mid-word; the caller lists the whole of each shortened one."""
    distinct = set(names)
    found = {}
    for name in distinct:
        parts = name.split("/")
        found[name] = name
        for k in range(1, len(parts)):
            tail = "/".join(parts[-k:])
            if not any(o != name and (o == tail or o.endswith("/" + tail)) for o in distinct):
                found[name] = "…/" + tail
                break
    return found
