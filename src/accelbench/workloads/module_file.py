"""An nn.Module object handed to the library, made loadable in a worker process.

The user's code runs only in workers, and a worker is another process: the module object
cannot be handed over as it is. It is pickled (`torch.save`) into the temp folder beside a
factory file of two lines that loads it, so it runs exactly as `--model FILE.py:model` does.
The files are named by the pickle's hash: the same module (class and weights) gives the same
reference, hence the same sweep id, so `resume` finds it again. Unpickling imports the
module's classes in the worker: a class defined in an interactive session (a `__main__` with
no file) cannot be found there, so it is refused here with the route that works.
"""

from __future__ import annotations

import getpass
import hashlib
import io
import os
import sys
import tempfile
from pathlib import Path

import torch
from torch import nn

from ..errors import UsageError
from .custom import ModelOptions

__all__ = ["FACTORY", "module_folder", "save_module"]

FACTORY = "model"  # the factory the written file defines

_LOADER = '''"""Written by accelbench (WorkloadRef.from_module): the module pickled beside it."""

from pathlib import Path

import torch


def {factory}():
    return torch.load(Path(__file__).with_suffix(".pt"), weights_only=False)
'''


def module_folder() -> Path:
    """Where saved modules go: this user's folder in the temp folder."""
    user = os.getuid() if hasattr(os, "getuid") else getpass.getuser()  # Windows: no uid
    return Path(tempfile.gettempdir()) / f"accelbench-modules-{user}"


def save_module(model: object, options: object) -> str:
    """Pickle `model` where a worker can load it; the `FILE.py:model` reference to it."""
    if not isinstance(model, nn.Module):
        raise UsageError(f"from_module takes a torch nn.Module, not {type(model).__name__}")
    if not isinstance(options, ModelOptions) or options.input_shape is None:
        raise UsageError(
            "from_module needs the input shape of one sample: "
            "ModelOptions(input_shape=(3, 32, 32), num_classes=10)"
        )
    _check_importable(model)
    buffer = io.BytesIO()
    torch.save(model, buffer)
    data = buffer.getvalue()
    stem = f"{type(model).__name__}_{hashlib.sha256(data).hexdigest()[:16]}"
    folder = module_folder()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        _write_once(folder / f"{stem}.pt", data)
        _write_once(folder / f"{stem}.py", _LOADER.format(factory=FACTORY).encode())
    except OSError as exc:
        raise UsageError(f"cannot save the module to {folder}: {exc.strerror or exc}") from None
    return f"{folder / stem}.py:{FACTORY}"


def _check_importable(model: nn.Module) -> None:
    """A worker imports each of the module's classes by name; an interactive session's
    `__main__` is not there to import from."""
    main = sys.modules.get("__main__")
    if getattr(main, "__file__", None) is not None:
        return  # a script: the worker imports it again, as multiprocessing does
    for part in model.modules():
        if type(part).__module__ == "__main__":
            raise UsageError(
                f"class {type(part).__name__} is defined in this interactive session, which a "
                "worker process cannot import: define it in a file and import it from there "
                "(or give the file as WorkloadRef('model.py:factory'))"
            )


def _write_once(path: Path, data: bytes) -> None:
    """Write `path` whole or not at all (a worker may be reading an earlier copy)."""
    if path.exists():
        return  # named by its content: what is there is the same
    partial = path.with_name(f".{path.name}.{os.getpid()}")
    partial.write_bytes(data)
    partial.replace(path)
