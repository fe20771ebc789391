"""What every export target shares: the model in inference form, example inputs, atomic files,
and the report each target fills in."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn

from ..errors import UsageError
from ..workloads import Workload

__all__ = ["ExportReport", "Exportable", "atomic_path", "export_model"]


@dataclass
class ExportReport:
    """One target's outcome: where the file is, how it was made, what it holds, how it checks."""

    target: str
    path: str
    facts: dict[str, Any] = field(default_factory=dict)  # exporter, opset, op count, size...
    validation: dict[str, Any] = field(default_factory=dict)  # errors against PyTorch, or why not
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "path": self.path,
            "facts": self.facts,
            "validation": self.validation,
            "notes": self.notes,
        }


class _Forward(nn.Module):
    """The workload's forward as a plain module returning one tensor (Hugging Face models
    return output objects, which exporters take badly)."""

    def __init__(self, workload: Workload, model: nn.Module) -> None:
        super().__init__()
        self.workload, self.model = workload, model

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        return self.workload.forward(self.model, inputs)


@dataclass
class Exportable:
    """A model ready to export: eval mode, on the CPU, in the requested precision."""

    name: str
    module: nn.Module
    example: torch.Tensor
    precision: str
    dynamic_batch: bool

    def fresh_inputs(self, seed: int) -> torch.Tensor:
        """New random inputs of the example's shape and kind, for validation."""
        generator = torch.Generator().manual_seed(seed)
        if self.example.dtype.is_floating_point:
            return torch.randn(self.example.shape, generator=generator).to(self.example.dtype)
        high = int(self.example.max()) + 1
        return torch.randint(0, max(high, 2), self.example.shape, generator=generator)


def exportable(workload: Workload, precision: str, batch: int, dynamic_batch: bool) -> Exportable:
    torch.manual_seed(0)
    module = _Forward(workload, workload.build_model()).eval()
    example, _ = workload.make_batch(torch.Generator().manual_seed(0), batch)
    if precision == "fp16":
        module = module.half()
        if example.dtype.is_floating_point:
            example = example.half()
    return Exportable(workload.name, module, example, precision, dynamic_batch)


def export_model(
    workload: Workload,
    targets: list[str],
    out_dir: Path,
    exporters: dict[str, Callable[[Exportable, Path], ExportReport]],
    precision: str = "fp32",
    batch: int = 1,
    dynamic_batch: bool = False,
) -> list[ExportReport]:
    """Export to each target in turn; files appear whole or not at all."""
    if not out_dir.is_dir():
        what = "is a file, not a directory" if out_dir.exists() else "no such directory"
        raise UsageError(f"cannot write to {out_dir}: {what}")
    model = exportable(workload, precision, batch, dynamic_batch)
    stem = workload.name.replace("/", "_").replace(":", "_")
    return [exporters[t](model, out_dir / stem) for t in targets]


@contextmanager
def atomic_path(final: Path) -> Iterator[Path]:
    """A temporary path beside `final`; renamed onto it only when the block succeeds, so no
    partial file is ever left where a complete one is expected."""
    scratch = Path(tempfile.mkdtemp(prefix=f".{final.name}.", dir=final.parent))
    try:
        partial = scratch / final.name
        yield partial
        if final.exists():
            shutil.rmtree(final) if final.is_dir() else final.unlink()
        partial.rename(final)
    except OSError as exc:
        raise UsageError(f"cannot write {final}: {exc.strerror or exc}") from None
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
