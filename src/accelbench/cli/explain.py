"""`accelbench explain`: one configuration measured, then profiled: where its step time goes."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from ..core.modes import DEFAULT_MODE
from .lever_options import add_single_lever_options, lever_values
from .mode_options import add_mode_options, mode_arg_values
from .options import (
    Commands,
    add_model_options,
    add_output_options,
    count,
    registered_modes,
    workload_ref,
)
from .run import add_profile_options, add_timing, profile_request, run_and_print

if TYPE_CHECKING:
    from ..workflows.benchmark import BenchmarkRequest


def add_parser(commands: Commands) -> None:
    explain = commands.add_parser(
        "explain",
        help="measure one configuration, then profile it: where the step's time goes",
        description="Measure one configuration as `run` does (its own process, the same stop "
        "rule, stored), then profile a few steps after the timed samples with torch.profiler "
        "(the device's kernels where PyTorch records them, else the host only) and a check of "
        "each operator of one step: how busy the device was, kernels per step, the top "
        "operators and kernels, time by category, synchronizations inside the step (with the "
        "line that caused them), and operators that ran on the CPU. The bottleneck verdict "
        "uses this evidence, with the batch probe as its second witness.",
    )
    explain.add_argument("workload", nargs="?", help="a workload name (or use --model)")
    add_model_options(explain.add_argument_group("your own model"))
    config = explain.add_argument_group("the configuration (one value each)")
    config.add_argument(
        "--device", default="", metavar="D", help="one device (default: the best available)"
    )
    config.add_argument(
        "--mode", choices=registered_modes(), default=DEFAULT_MODE, help=f"default: {DEFAULT_MODE}"
    )
    config.add_argument("--batch-size", type=count(1), metavar="N", help="default: the workload's")
    add_mode_options(config, single=True)
    add_single_lever_options(config)
    add_timing(explain.add_argument_group("timing"))
    add_profile_options(explain.add_argument_group("trace"), always=True)
    add_output_options(explain, progress=True)
    explain.set_defaults(handler=handle)


def request_from(args: argparse.Namespace) -> BenchmarkRequest:
    from ..devices import pick_device
    from ..workflows.benchmark import BenchmarkRequest

    return BenchmarkRequest(
        workloads=(workload_ref(args),),
        devices=args.device or pick_device().name,
        modes=(args.mode,),
        batch_sizes=(args.batch_size,),
        levers=lever_values(args),
        mode_args=mode_arg_values(args),
        epochs=args.epochs,
        rounds=args.rounds,
        max_rounds=args.max_rounds,
        min_gap=args.min_gap,
        max_time=args.max_time,
        warmup=args.warmup,
        timeout=args.timeout,
        profile=profile_request(args, always=True),
    )


def handle(args: argparse.Namespace) -> int:
    from ..workflows.explain import one_configuration

    return run_and_print(one_configuration(request_from(args)), args)
