"""Issue 37 item 3: `run` and `optimize`'s fp32 eager time one configuration two ways. This
times seed-cnn inference on the CPU both ways in one process, alternately, so the host's load
falls on both alike: `run`'s (an it of the workload's 20 steps, a fixed count of its) and
optimize's (one step an it, the adaptive rule: 2 s, at least 6 samples of 0.25 s or more).

    PYTHONPATH=src python3 benchmarks/harness_gap.py [ROUNDS] [ITS]

ITS: `run`'s its per round (100 over 3 processes is 33 each; fewer on a slow host).
"""

from __future__ import annotations

import sys
import time

from accelbench.devices import resolve_devices
from accelbench.engine.measure import StopRule
from accelbench.engine.runner import make_spec, run_config
from accelbench.workloads import get_workload


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    its = int(sys.argv[2]) if len(sys.argv) > 2 else 33
    workload, cpu = get_workload("seed-cnn"), resolve_devices("cpu")[0]
    ways = (
        ("run", make_spec(workload, cpu, mode="infer"), StopRule(blocks=its, warmup=1)),
        (
            "optimize",
            make_spec(workload, cpu, mode="infer", steps_per_block=1),
            StopRule(max_time=2.0, warmup=1, min_samples=6, time_cap=30.0),
        ),
    )
    for i in range(rounds):
        for name, spec, stop in ways:
            started = time.perf_counter()
            result = run_config(spec, workload, cpu, stop, probe=False)
            m = result.measurement
            assert m is not None and result.samples_per_second is not None, result.error
            print(
                f"{i} {name:8s} steps/it={spec.steps_per_block:2d} samples={len(m.samples):3d} "
                f"samples/s={result.samples_per_second:8.0f} "
                f"wall={time.perf_counter() - started:5.1f} s",
                flush=True,
            )


if __name__ == "__main__":
    main()
