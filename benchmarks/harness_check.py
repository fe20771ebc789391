"""How much does accelbench's harness add? Its timing loop against a bare CUDA-event loop,
interleaved in one process on the very same prepared step.

For each configuration this builds the step once, exactly as accelbench does
(accelbench.backends.build), warms it up, then alternates for several rounds: a bare loop (one
pair of torch.cuda.Event around N steps run back to back: the mean step) and accelbench's own
`measure` with its default adaptive stop rule (the median step). Same process, same memory,
same clocks: the ratio of the two medians over the rounds is the harness's cost. With --compare
RUN.json it also sets the figure `accelbench run` measured in its own worker process beside
them.

    PYTHONPATH=src python benchmarks/harness_check.py \
        --config resnet50:train:bf16:256:cl --config seed-cnn:train:fp32:64
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys

import torch

from accelbench.backends import block_function, build
from accelbench.devices import resolve_devices
from accelbench.engine.measure import StopRule, measure
from accelbench.engine.runner import make_spec
from accelbench.workloads import get_workload


def parse_config(text: str) -> dict:
    """workload:mode:precision:batch[:cl][:compile][:graphs]"""
    workload, mode, precision, batch, *flags = text.split(":")
    return {
        "workload": workload,
        "mode": mode,
        "precision": precision,
        "batch_size": int(batch),
        "channels_last": "cl" in flags,
        "compile": "default" if "compile" in flags else "",
        "cuda_graphs": "graphs" in flags,
    }


def bare_step_seconds(step, steps: int) -> float:
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(steps):
        step()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / 1000 / steps


def compare(config: dict, rounds: int, seconds: float) -> dict:
    device = resolve_devices("cuda")[0]
    workload = get_workload(config["workload"])
    spec = make_spec(workload, device, **{k: v for k, v in config.items() if k != "workload"})
    prep = build(spec, workload, device)
    for _ in range(10):
        prep.step()
    per_step = bare_step_seconds(prep.step, 5)
    steps = max(20, int(seconds / per_step))  # each bare loop lasts about `seconds`
    bare, ours = [], []
    for _ in range(rounds):
        bare.append(bare_step_seconds(prep.step, steps))
        m = measure(block_function(prep), device.timer, StopRule(max_time=seconds))
        ours.append(m.time.median / spec.steps_per_block)
    return {
        **config,
        "rounds": rounds,
        "bare_steps": steps,
        "bare_step_s": bare,
        "accelbench_step_s": ours,
        "ratio_of_medians": statistics.median(ours) / statistics.median(bare),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", action="append", required=True, type=parse_config)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=2.0, help="length of each timed loop")
    parser.add_argument("--compare", metavar="RUN_JSON", action="append", default=[])
    args = parser.parse_args()
    runs = []
    for path in args.compare:
        with open(path) as f:
            runs += json.load(f)["results"]
    for config in args.config:
        row = compare(config, args.rounds, args.seconds)
        worker = next(
            (
                r
                for r in runs
                if r["status"] == "ok"
                and r["spec"]["device"] != "cpu"
                and all(r["spec"][k] == v for k, v in config.items())
            ),
            None,
        )
        if worker is not None:
            row["accelbench_run_worker_step_s"] = worker["step_time_s_median"]
        print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
