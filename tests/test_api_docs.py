"""Issue 37 item 12: each Python block of docs/api.md runs as written, as a script of its own
in one folder (the compare block reads what the blocks before it stored), with fewer its where
SHORTER says so; a block that no longer runs, or prints nothing, fails here."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
API_DOC = ROOT / "docs" / "api.md"

# What each block is given to run in seconds on a shared 2-core CPU: (as documented, as run).
SHORTER = [
    ("rounds=2,", "rounds=1,"),
    ("epochs=3))", "epochs=2, rounds=1))"),
    (
        'workloads="seed-cnn", devices="best", batch_sizes=64, epochs=3)',
        'workloads="mlp", devices="best", batch_sizes=16, epochs=2, rounds=1)',
    ),
    ('mode="infer", budget=120)', 'mode="infer", levers="threads", epochs=2, budget=30)'),
    ('precisions=("fp32", "bf16")', 'precisions="fp32"'),
    ("VerifySettings(epochs=3)", "VerifySettings(epochs=1)"),
    ('CalibrateRequest(devices="cpu")', 'CalibrateRequest(devices="cpu", size=128, repeats=2)'),
    ('get_workload("seed-cnn"), device, blocks=20)', 'get_workload("mlp"), device, blocks=3)'),
    ("track(range(100)", "track(range(4)"),
]


def _blocks() -> list[str]:
    text = API_DOC.read_text()
    for documented, run in SHORTER:
        assert text.count(documented) == 1, f"docs/api.md no longer says {documented!r} once"
        text = text.replace(documented, run)
    return re.findall(r"^```python\n(.*?)^```$", text, flags=re.MULTILINE | re.DOTALL)


BLOCKS = _blocks()


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("api-docs")


def test_every_workflow_has_a_block():
    for call in ("benchmark", "explain", "optimize", "verify", "compare", "export", "calibrate"):
        assert any(f"accelbench.{call}(" in block for block in BLOCKS), call


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_the_block_runs(index: int, folder: Path) -> None:
    script = folder / f"block_{index}.py"
    script.write_text(BLOCKS[index])
    env = {k: v for k, v in os.environ.items() if k not in ("ACCELBENCH_DB", "ACCELBENCH_DEVICE")}
    env["ACCELBENCH_DEVICE"] = "cpu"  # pick_device() and devices="best": the CPU in a test
    ran = subprocess.run(
        [sys.executable, script.name], cwd=folder, capture_output=True, text=True, env=env,
        timeout=400,
    )  # fmt: skip
    assert ran.returncode == 0, f"{BLOCKS[index]}\n{ran.stderr[-3000:]}"
    assert ran.stdout.strip(), f"block {index} printed nothing"
