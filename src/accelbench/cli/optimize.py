"""`accelbench optimize`: the optimization ladder for one workload on one device."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from ..core.vocab import MODES
from .options import (
    Commands,
    ListOf,
    OneOf,
    add_model_options,
    add_output_options,
    count,
    from_args,
    positive,
    seconds,
    share,
    workload_ref,
)
from .output import db_path, emit_json, exit_code, width

if TYPE_CHECKING:
    from ..workflows.optimize_plan import OptimizeRequest


def add_parser(commands: Commands) -> None:
    from ..levers import ladder_groups

    optimize = commands.add_parser(
        "optimize",
        help="try every optimization that applies, measure speedup and drift, recommend one",
        description="The optimization ladder: fp32 eager, each lever alone (tf32, fp16, bf16, "
        "channels_last, torch.compile, CUDA graphs; for inference also int8 through ONNX "
        "Runtime and pruning), and the stacks that make sense, each measured in its own "
        "process with its speedup over fp32 eager (bootstrap 95% CI) and its drift from the "
        "fp32 model on the same inputs. Recommends the fastest variant within the tolerance. "
        "Exit code 0 when every variant ran or was unsupported, 1 when one failed (OOM, error, "
        "timeout), 2 for bad input.",
    )
    optimize.add_argument("workload", nargs="?", help="a workload name (or use --model)")
    add_model_options(optimize.add_argument_group("your own model"))
    optimize.add_argument(
        "--device", default="", metavar="D", help="one device (default: the best available)"
    )
    optimize.add_argument("--mode", choices=MODES, default="infer", help="default: infer")
    optimize.add_argument(
        "--batch-size", type=count(1), metavar="N", help="default: the workload's"
    )
    _add_drift(optimize)
    groups = ladder_groups()  # from the lever registry, which imports no torch
    optimize.add_argument(
        "--levers",
        type=ListOf(OneOf(groups)),
        default=groups,
        metavar="LIST",
        help=f"which levers to try: {', '.join(groups)} (default: all that apply)",
    )
    _add_timing(optimize)
    add_output_options(optimize, progress=True)
    optimize.set_defaults(handler=handle)


def _add_drift(optimize: argparse.ArgumentParser) -> None:
    optimize.add_argument(
        "--tolerance",
        type=positive,
        default=0.05,
        metavar="REL",
        help="largest relative output error allowed, against the largest fp32 output "
        "(default: 0.05)",
    )
    optimize.add_argument(
        "--min-top1",
        type=share,
        default=0.95,
        metavar="FRACTION",
        help="for classifiers, the share of samples whose top-1 class must agree with fp32's "
        "(default: 0.95, or 95%%)",
    )


def _add_timing(optimize: argparse.ArgumentParser) -> None:
    optimize.add_argument(
        "--epochs", type=count(1), metavar="N", help="time exactly N its per variant"
    )
    optimize.add_argument(
        "--max-time",
        type=seconds,
        metavar="S",
        help="otherwise the adaptive rule, up to S timed seconds per variant (default: 10)",
    )
    optimize.add_argument("--warmup", type=count(0), default=1, metavar="N")
    optimize.add_argument("--timeout", type=seconds, default=900.0, metavar="S")


def request_from(args: argparse.Namespace) -> OptimizeRequest:
    from ..workflows.optimize import Tolerance
    from ..workflows.optimize_plan import OptimizeRequest

    tolerance = Tolerance(args.tolerance, args.min_top1)
    return from_args(OptimizeRequest, args, workload=workload_ref(args), tolerance=tolerance)


def handle(args: argparse.Namespace) -> int:
    from ..render.console import optimize_table
    from ..store.db import Store
    from ..workflows.optimize import recommend
    from ..workflows.optimize_plan import plan_ladder, run_ladder

    ladder = plan_ladder(request_from(args))
    with Store(db_path(args)) as store:
        verdicts = run_ladder(ladder, store, quiet=args.quiet)
    chosen = recommend(verdicts)
    if args.json:
        emit_json(
            {
                "db": str(store.path),
                "sweep": ladder.id,
                "tolerance": vars(ladder.tolerance),
                "variants": [v.to_dict() for v in verdicts],
                "not_tried": ladder.not_tried,
                "recommended": chosen.rung.name,
            }
        )
    else:
        print(optimize_table(verdicts, chosen, ladder, width=width()), end="")
    return exit_code(v.result.status for v in verdicts)
