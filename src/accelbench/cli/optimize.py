"""`accelbench optimize`: the optimization ladder for one workload on one device."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from ..errors import StoreError
from .mode_options import add_mode_options, mode_arg_values
from .options import (
    Commands,
    ListOf,
    OneOf,
    add_model_options,
    add_output_options,
    count,
    from_args,
    positive,
    registered_modes,
    seconds,
    share,
    workload_ref,
)
from .output import db_path, emit_json, print_command_wall, width

if TYPE_CHECKING:
    from ..store.db import Store
    from ..workflows.optimize import Assessment
    from ..workflows.optimize_plan import Ladder, OptimizeRequest, Searched


def add_parser(commands: Commands) -> None:
    from ..levers import default_groups, ladder_groups

    optimize = commands.add_parser(
        "optimize",
        help="search the optimizations that apply, measure speedup and drift, recommend one",
        description="The optimization search: fp32 eager and its verdict; then each lever once, on "
        "the best stack so far, those that relieve what bounds the step first (tf32, "
        "fp16, bf16 and channels_last where it is compute-bound, CUDA graphs where it is "
        "launch-bound; then on the CPU the thread count; then cudnn.benchmark, a foreach "
        "or fused optimizer), each kept only if its gain over the stack lies above "
        "--keep-threshold beyond noise; for inference also a backend switch, ONNX Runtime"
        " fp32 (Core ML on the Mac), int8 on it judged against it, and pruning, alone; "
        "then torch.compile (for generate a static KV cache with a compiled decode step) "
        "once, last, on the best stack, with budget held for it; then the compile modes; "
        "then a larger batch, offered but never recommended. Each variant runs in its own"
        " process with its speedup over fp32 eager (bootstrap 95% CI) and its drift from "
        "the fp32 model on the same inputs; a variant that fails is reported as not "
        "applying. Recommends the fastest variant within the tolerance, confirmed in "
        "three processes, with the factors its gain is made of; prints the path the "
        "search took and where its time went (set-up, measuring), and lists each lever "
        "not tried with the reason. Exit code 0 when fp32 eager ran, 1 when it failed, 2 "
        "for bad input.",
    )
    optimize.add_argument("workload", nargs="?", help="a workload name (or use --model)")
    add_model_options(optimize.add_argument_group("your own model"))
    optimize.add_argument(
        "--device", default="", metavar="D", help="one device (default: the best available)"
    )
    optimize.add_argument(
        "--mode", choices=registered_modes(), default="infer", help="default: infer"
    )
    optimize.add_argument(
        "--batch-size", type=count(1), metavar="N", help="default: the workload's"
    )
    add_mode_options(optimize, single=True)
    _add_drift(optimize)
    groups, usual = ladder_groups(), default_groups()  # the registry's: it imports no torch
    opt_in = [g for g in groups if g not in usual]
    optimize.add_argument(
        "--levers",
        type=ListOf(OneOf(groups)),
        default=usual,
        metavar="LIST",
        help=f"which levers to try: {', '.join(groups)} (default: all that apply but "
        f"{', '.join(opt_in)}, which are tried only when named)",
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
        "(default: 0.05); --mode generate holds its logits to --logit-tolerance",
    )
    optimize.add_argument(
        "--logit-tolerance",
        type=positive,
        default=0.5,
        metavar="SHARE",
        help="--mode generate: largest logit error allowed, as a share of the spread of "
        "fp32's logits (rms over the vocabulary / standard deviation, at the worst position; "
        "default: 0.5)",
    )
    optimize.add_argument(
        "--min-top1",
        type=share,
        default=0.95,
        metavar="FRACTION",
        help="for classifiers, the share of samples whose top-1 class must agree with fp32's; "
        "for --mode generate, the share of token predictions equal to fp32's, each step fed "
        "fp32's tokens, at the positions where fp32's top token leads by more than the "
        "variant's logit error can flip (default: 0.95, or 95%%)",
    )


def _add_timing(optimize: argparse.ArgumentParser) -> None:
    optimize.add_argument(
        "--blocks",
        dest="epochs",
        type=count(1),
        metavar="N",
        help="time exactly N blocks (its) per variant",
    )
    optimize.add_argument(
        "--max-time",
        type=seconds,
        metavar="S",
        help="otherwise the adaptive rule, up to S timed seconds per variant (default: 2)",
    )
    optimize.add_argument("--warmup", type=count(0), default=1, metavar="N")
    optimize.add_argument(
        "--timeout", type=seconds, default=900.0, metavar="S", help="per variant (default: 900)"
    )
    optimize.add_argument(
        "--budget",
        type=seconds,
        default=300.0,
        metavar="S",
        help="seconds for the whole search (default: 300); variants it leaves out are listed "
        "as not tried",
    )
    optimize.add_argument(
        "--keep-threshold",
        type=share,
        default=0.02,
        metavar="SHARE",
        help="a lever is kept only when its gain's 95%% interval lies above this (default: "
        "0.02, or 2%%); the path says when a lever paid less",
    )


def request_from(args: argparse.Namespace) -> OptimizeRequest:
    from ..workflows.optimize import Tolerance
    from ..workflows.optimize_plan import OptimizeRequest

    tolerance = Tolerance(args.tolerance, args.min_top1, args.logit_tolerance)
    return from_args(
        OptimizeRequest,
        args,
        workload=workload_ref(args),
        tolerance=tolerance,
        mode_args={name: values[0] for name, values in mode_arg_values(args).items()},
    )


def handle(args: argparse.Namespace) -> int:
    from ..render.console import optimize_table
    from ..store.db import Store
    from ..workflows.optimize import recommend
    from ..workflows.optimize_plan import plan_ladder, run_ladder

    ladder = plan_ladder(request_from(args))
    with Store(db_path(args)) as store:
        searched = run_ladder(ladder, store, quiet=args.quiet)
        versus_run = _beside_run(store, ladder, searched)
    verdicts = searched.verdicts
    chosen = recommend(verdicts, ladder.keep_threshold)
    if args.json:
        emit_json({**_report(searched, chosen, ladder, str(store.path)), "vs_run": versus_run})
    else:
        print(optimize_table(searched, chosen, ladder, width=width()), end="")
        if versus_run:
            print(versus_run)
        print_command_wall(args)
    # A variant that fails is a finding of the search; only a failed baseline is a failure.
    return 0 if verdicts and verdicts[0].result.measurement is not None else 1


def _beside_run(store: Store, ladder: Ladder, searched: Searched) -> str:
    """fp32 eager beside `run`'s figure of the same configuration, where the store has one."""
    from ..store.db import Filters
    from ..workflows.optimize import beside_run

    if not searched.verdicts:
        return ""
    base = searched.verdicts[0].result
    spec = base.spec
    same = Filters(workload=spec.workload, device=spec.device, mode=spec.mode, precision="fp32")
    try:
        stored = store.results(same, limit=200)
    except StoreError:  # the comparison is an aside: the search stands without it
        return ""
    return beside_run(base, stored, ladder.workload.steps_per_block)


def _report(searched: Searched, chosen: Assessment, ladder: Ladder, db: str) -> dict[str, Any]:
    """The search as --json shows it: the console's variants, path, not-tried list and
    recommendation, with the factors of the recommendation's gain."""
    from ..workflows.optimize import gain_path, gain_text

    verdicts, outcome = searched.verdicts, searched.outcome
    names = [v.rung.name for v in verdicts]
    factors = gain_path(verdicts, chosen)
    return {
        "db": db,
        "sweep": ladder.id,
        "tolerance": vars(ladder.tolerance),
        "budget_s": ladder.budget,
        "keep_threshold": ladder.keep_threshold,
        "wall_s": outcome.wall_s,
        "time": searched.time.to_dict() if searched.time is not None else None,
        "variants": [
            {
                **v.to_dict(names),
                "phase": t.phase,
                "why": outcome.why_of(t),
                "outcome": outcome.outcome_of(t),
                "wall_s": t.wall_s,
            }
            for v, t in zip(verdicts, outcome.trials, strict=True)
        ],
        "path": searched.path(),
        "not_tried": {**ladder.not_tried, **dict(outcome.not_tried)},
        "recommended": chosen.rung.name,
        "recommended_speedup": chosen.speedup.to_dict() if chosen.speedup else None,
        "recommended_gain": gain_text(factors, chosen.speedup),
        "recommended_path": [f.to_dict() for f in factors],
    }
