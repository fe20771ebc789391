"""Issue 37 item 11: a CPU compile on a machine with a CUDA toolkit and no CUDA device logged
"No CUDA runtime is found, using CUDA_HOME=..." (torch.utils.cpp_extension, imported by
Inductor) to the user's stderr; the compile lever drops that one warning."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SCRIPT = """
import sys
import accelbench
result = accelbench.run_one(
    accelbench.get_workload("mlp"), accelbench.pick_device("cpu"), blocks=1, compile="default"
)
print(result.status, "torch.utils.cpp_extension" in sys.modules)
"""


def test_a_cpu_compile_says_nothing_of_cuda_home(tmp_path: Path) -> None:
    # The warning's conditions, whatever the host: a CUDA_HOME that exists, no CUDA device.
    env = {**os.environ, "CUDA_HOME": str(tmp_path), "CUDA_VISIBLE_DEVICES": ""}
    ran = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=400
    )
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert ran.stdout.split() == ["ok", "True"]  # compiled, and the warning's module loaded
    assert "No CUDA runtime" not in ran.stderr
    assert "CUDA_HOME" not in ran.stderr
