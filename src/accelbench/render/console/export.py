"""`accelbench export`'s table: each file, what made it, and how it checks against PyTorch."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..text import format_bytes
from .table import new_table, render_table

if TYPE_CHECKING:  # the type only: the exporters import torch
    from ...exporters.common import ExportReport

__all__ = ["export_table"]


def export_table(reports: Sequence[ExportReport], width: int = 120) -> str:
    """The file, what it holds, and how it compares with PyTorch, per export target."""
    headers = ("target", "file", "made by", "ops", "size", "check against PyTorch")
    table = new_table("export", headers)
    notes = []
    for r in reports:
        facts = r.facts
        made = facts.get("exporter") or f"{facts.get('format', '')} ({facts.get('compute_units')})"
        if "opset" in facts:
            made += f", opset {facts['opset']}"
        size = format_bytes(facts["bytes"]) if "bytes" in facts else "—"
        ops = str(facts.get("ops", "—"))
        table.add_row(r.target, r.path, made, ops, size, _check(r.validation))
        if "inputs" in facts and isinstance(facts["inputs"], dict):
            notes.append(f"{r.target}: inputs {facts['inputs']}, outputs {facts['outputs']}")
        notes += [f"{r.target}: {note}" for note in r.notes]
    return render_table(table, notes, width)


def _check(check: Mapping[str, Any]) -> str:
    """The validation against PyTorch in words: skipped and why, ok, or FAILED."""
    if check.get("ok") is None:
        return str(check.get("skipped") or check.get("error", ""))
    if "max_rel_error" not in check:
        return f"FAILED: {check.get('error')}"
    return (
        f"{'ok' if check['ok'] else 'FAILED'}: max relative error "
        f"{check['max_rel_error']:.2g} (tolerance {check.get('tolerance', '?')})"
    )
