"""What every export target shares: the model in inference form, example inputs, atomic files,
the output folder, the third-party libraries' chatter kept off the terminal, and the report each
target fills in."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn

from ..devices.oom import is_out_of_memory
from ..errors import UsageError
from ..workloads import Workload
from ..workloads.inputs import shapes_text

__all__ = [
    "ExportReport",
    "Exportable",
    "atomic_path",
    "export_model",
    "library_output",
    "several_inputs_refusal",
]


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
    if not isinstance(example, torch.Tensor):
        raise UsageError(f"cannot export {workload.name}: {_one_tensor(shapes_text(example))}")
    if precision == "fp16":
        module = module.half()
        if example.dtype.is_floating_point:
            example = example.half()
    return Exportable(workload.name, module, example, precision, dynamic_batch)


def several_inputs_refusal(workload: Workload) -> str | None:
    """Why the workload's model cannot be exported (nor run on a backend that runs an exported
    model): its forward takes several inputs. None when it takes one tensor."""
    if not workload.several_inputs:
        return None
    return f"{workload.name}: {_one_tensor()}"


def _one_tensor(shapes: str = "") -> str:
    """Why a model whose forward takes several inputs (of `shapes`, where known) is not
    exported, and what to do instead."""
    inputs = f"several inputs ({shapes})" if shapes else "several inputs"
    return (
        f"its forward takes {inputs}, and accelbench exports models whose "
        "forward takes one tensor; export a module that takes one, or call torch.onnx.export "
        "with your inputs yourself"
    )


def export_model(
    workload: Workload,
    targets: list[str],
    out_dir: Path,
    exporters: dict[str, Callable[[Exportable, Path], ExportReport]],
    precision: str = "fp32",
    batch: int = 1,
    dynamic_batch: bool = False,
) -> list[ExportReport]:
    """Export to each target in turn into `out_dir` (created, parents too, where missing);
    files appear whole or not at all."""
    _make_directory(out_dir)
    try:
        model = exportable(workload, precision, batch, dynamic_batch)
        return [exporters[t](model, out_dir.resolve() / file_stem(workload.name)) for t in targets]
    except Exception as exc:  # the allocator's failure is a RuntimeError, told by its message
        if not is_out_of_memory(exc):
            raise
        raise UsageError(
            f"out of memory exporting {workload.name} with an example batch of {batch:,}: "
            "try a smaller --batch-size (with --dynamic-batch the ONNX model still takes any)"
        ) from None


def file_stem(name: str) -> str:
    """What an exported file is named after: a built-in workload's name, or your model's file
    or module and its factory, so that two files' `make` do not overwrite each other
    (`path/to/vit.py:make_vit` gives `vit.make_vit`, `nets.vit:make` gives `nets.vit.make`, and
    a factory's arguments follow: `vit.make(depth=12)`), never a mangled path."""
    custom = _CUSTOM.fullmatch(name)
    if custom:
        where, factory = custom.groups()
        source = Path(where).stem if where.endswith(".py") else where
        name = f"{source}.{factory}"
    return _UNSAFE.sub("_", name).strip(".") or "model"


# What a file name keeps of a model's name: letters, digits and a few marks every file system
# takes; the rest (a folder's slash, a quote of a factory's argument) becomes "_".
_UNSAFE = re.compile(r"[^\w.,=()+-]")
# FILE.py:factory or package.module:factory, a factory's arguments after it (they may hold ":")
_CUSTOM = re.compile(r"(.+?\.py|[\w.]+):(.+)", re.DOTALL)


def _make_directory(out_dir: Path) -> None:
    """`out_dir`, created with its parents where missing; UsageError when it cannot be."""
    if out_dir.exists() and not out_dir.is_dir():
        raise UsageError(f"cannot write to {out_dir}: is a file, not a directory")
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot create the directory {out_dir}: {exc.strerror or exc}") from None


@contextmanager
def library_output(verbose: bool) -> Iterator[list[str]]:
    """The exporting libraries' own output, hidden unless `verbose`: coremltools' "Failed to
    load _MLModelProxy" lines and version warnings at import, its tqdm bars, torch.onnx's
    progress. Some of it is printed from C, past sys.stdout, so both file descriptors go to a
    scratch file meanwhile; the yielded list holds its lines afterwards. What matters (a failed
    validation, an error) is reported by accelbench itself once the block is over."""
    hidden: list[str] = []
    if verbose:
        yield hidden
        return
    tqdm_before = os.environ.get("TQDM_DISABLE")
    os.environ["TQDM_DISABLE"] = "1"  # read by tqdm as it is imported: no bars drawn at all
    with tempfile.TemporaryFile() as sink:
        # Python's own streams too, in case they are not file descriptors 1 and 2 (a test's
        # capture, a notebook); line-buffered, so the two kinds of write keep their order.
        text = open(sink.fileno(), "w", buffering=1, errors="replace", closefd=False)  # noqa: SIM115
        sys.stdout.flush()
        sys.stderr.flush()
        saved = {fd: os.dup(fd) for fd in (1, 2)}
        try:
            for fd in saved:
                os.dup2(sink.fileno(), fd)
            with contextlib.redirect_stdout(text), contextlib.redirect_stderr(text):
                yield hidden
        finally:
            text.close()
            sys.stdout.flush()  # what the real streams still buffer goes to the sink too
            sys.stderr.flush()
            for fd, copy in saved.items():
                os.dup2(copy, fd)
                os.close(copy)
            _restore_env("TQDM_DISABLE", tqdm_before)
            sink.seek(0)
            hidden.extend(sink.read().decode(errors="replace").splitlines())


def _restore_env(name: str, value: str | None) -> None:
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value


@contextmanager
def atomic_path(final: Path) -> Iterator[Path]:
    """A temporary path beside `final`; renamed onto it only when the block succeeds, so no
    partial file is ever left where a complete one is expected (a file is replaced in one
    rename; a folder, a Core ML package, is removed first). The scratch folder's name is short:
    one made from a long file name would not fit where the file's does."""
    scratch = Path(tempfile.mkdtemp(prefix=".accelbench-", dir=final.parent))
    try:
        partial = scratch / final.name
        yield partial
        if final.is_dir() and not final.is_symlink():
            shutil.rmtree(final)
        os.replace(partial, final)
    except OSError as exc:
        raise UsageError(f"cannot write {final}: {exc.strerror or exc}") from None
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
