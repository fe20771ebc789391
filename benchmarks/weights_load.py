"""Issue 39: where a language model's build goes in an optimization search's processes. The
first process builds the model (random initialization) and saves it (workloads/weights); each
later one loads it. This times, in one process: the build, the save, then loading the saved
file alternately the way before (read into the process's memory) and the way now (mapped,
`weights._load`), each followed by touching every weight once, as moving it to a device does.

    PYTHONPATH=src python3 benchmarks/weights_load.py [WORKLOAD] [ROUNDS]

It needs about three times the model's fp32 size in memory (llama-1b: 4.9 GB).
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

from accelbench.workloads import get_workload, weights


def _timed(what: str, make: Any, *args: Any) -> Any:
    started = time.perf_counter()
    made = make(*args)
    print(f"{what}: {time.perf_counter() - started:.2f} s", flush=True)
    return made


def _touch(model: torch.nn.Module) -> float:
    with torch.no_grad():
        return sum(float(p.sum()) for p in model.parameters())


def _read(path: Path) -> torch.nn.Module:
    """The load before: the file read into the process's memory."""
    model: torch.nn.Module = torch.load(path, weights_only=False)["model"]
    return model


def main() -> None:
    name = sys.argv[1] if len(sys.argv) > 1 else "llama-1b"
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    workload = get_workload(name)
    torch.manual_seed(0)
    model = _timed(f"{name}: build_model (random init)", workload.build_model)
    with tempfile.TemporaryDirectory(prefix="weights-load-") as folder:
        path = Path(folder) / "model.pt"
        _timed("save (weights._save)", weights._save, path, model)
        print(f"file: {path.stat().st_size / 1e9:.2f} GB", flush=True)
        del model
        for i in range(rounds):
            for way, load in (("read (before)", _read), ("mapped (now)", weights._load)):
                loaded = _timed(f"round {i + 1}: load, {way}", load, path)
                _timed("  then touch every weight", _touch, loaded)
                del loaded


if __name__ == "__main__":
    main()
