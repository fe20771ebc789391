"""`accelbench run`: benchmark workloads on devices, every combination in its own process."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.levels import DEFAULT_POLICY, QUICK_ROUNDS, QUICK_SECONDS, QUICK_STEPS
from ..core.modes import DEFAULT_MODE
from ..core.vocab import BACKENDS, DEFAULT_WORKLOAD
from ..errors import StoreError, UsageError
from .lever_options import add_lever_options, lever_values
from .mode_options import add_mode_options, mode_arg_values
from .options import (
    Commands,
    ListOf,
    OneOf,
    add_model_options,
    add_output_options,
    count,
    from_args,
    idle_seconds,
    model_options,
    modes_help,
    registered_modes,
    seconds,
)
from .output import (
    HISTORY_SCAN,
    db_path,
    emit_json,
    exit_code,
    print_command_wall,
    result_json,
    stored_history,
    width,
    with_history,
)

if TYPE_CHECKING:
    from ..analysis.explanation import ProfileRequest
    from ..analysis.history import Placement
    from ..core.result import Result, RunSpec
    from ..store.db import Store
    from ..workflows.benchmark import BenchmarkRequest, Plan

DEVICES_HELP = "cpu, cuda, cuda:N, mps, xpu, xpu:N, or all (default)"


def add_parser(commands: Commands) -> None:
    run = commands.add_parser(
        "run",
        help="benchmark workloads on devices (default: seed-cnn training on all devices)",
        description="Benchmark each configuration (workloads x devices x options) in its own "
        "process and store the results. With no arguments: seed 000's benchmark on every "
        "available device, CPU included.",
    )
    run.add_argument(
        "workloads",
        nargs="*",
        metavar="WORKLOAD",
        help=f"workload names (default: {DEFAULT_WORKLOAD}; see `accelbench workloads`)",
    )
    add_model_options(run.add_argument_group("your own model"))
    matrix = run.add_argument_group("configurations (lists multiply)")
    parallel = run.add_argument_group("data parallelism (torch.distributed, DDP)")
    _add_configurations(matrix)
    add_lever_options(run, {g.title or "": g for g in (matrix, parallel)})
    _add_parallel(parallel)
    timing = run.add_argument_group("timing")
    add_timing(timing)
    _add_switches(timing)
    add_profile_options(run.add_argument_group("why (the profiler, after the timed samples)"))
    add_output_options(run, progress=True)
    run.set_defaults(handler=handle)


def _add_configurations(matrix: argparse._ArgumentGroup) -> None:
    matrix.add_argument("--devices", default="all", metavar="LIST", help=DEVICES_HELP)
    matrix.add_argument(
        "--modes",
        type=ListOf(OneOf(registered_modes())),
        default=(DEFAULT_MODE,),
        metavar="LIST",
        help=modes_help(DEFAULT_MODE),
    )
    matrix.add_argument(
        "--batch-sizes",
        type=ListOf(count(1)),
        default=(None,),
        metavar="LIST",
        help="batch sizes (default: the workload's)",
    )
    add_mode_options(matrix)  # each mode's own axes: they multiply its configurations only
    matrix.add_argument(
        "--backends",
        type=ListOf(OneOf(BACKENDS)),
        default=("torch",),
        metavar="LIST",
        help="torch; onnxruntime (inference on the model exported to ONNX, one row per "
        "execution provider of the device), or one provider such as onnxruntime-cpu; coreml "
        "(macOS: inference on the model converted to Core ML, one row per compute-unit setting "
        "on the mps device), or one setting such as coreml-cpu-and-ne (default: torch)",
    )


def _add_parallel(parallel: argparse._ArgumentGroup) -> None:
    parallel.add_argument(
        "--nnodes", type=count(1), default=1, metavar="M", help="nodes taking part (default: 1)"
    )
    parallel.add_argument(
        "--node-rank",
        type=count(0),
        default=0,
        metavar="R",
        help="this node's rank, with --nnodes > 1",
    )
    parallel.add_argument(
        "--rdzv-endpoint",
        default="",
        metavar="HOST:PORT",
        help="where the nodes meet, with --nnodes > 1",
    )


def add_timing(timing: argparse._ArgumentGroup) -> None:
    """The stop rule's options and the per-configuration time limit (run, explain)."""
    _add_stop_rule(timing)
    _add_processes(timing)


def _add_stop_rule(timing: argparse._ArgumentGroup) -> None:
    """How long one configuration is timed, and how it warms up first."""
    timing.add_argument(
        "--blocks",
        dest="epochs",
        type=count(1),
        metavar="N",
        help="time exactly N blocks in all (a block is one it of it/s: the workload's steps "
        "per it), spread evenly over the configuration's processes (default: the workload's, "
        "100 for the seed workloads; otherwise the stop rule of --max-time)",
    )
    timing.add_argument(
        "--max-time",
        type=seconds,
        metavar="S",
        help="time its for S seconds in all, shared by the configuration's processes, each "
        "stopping early once its 95%% CI is within 2%% of its median (default for workloads "
        "without a fixed count: 20)",
    )
    timing.add_argument(
        "--warmup",
        type=count(0),
        default=1,
        metavar="N",
        help="warm-up its before timing (default: 1; timed to a CI, not a fixed count, at least "
        "2, the last of which sizes its samples; a compiled decode step on generate at least 2)",
    )


def _add_processes(timing: argparse._ArgumentGroup) -> None:
    """In how many processes a configuration is measured, and how long each may take."""
    timing.add_argument(
        "--rounds",
        type=count(1),
        metavar="N",
        help="measure each configuration in exactly N processes, one after another (the "
        "interval is taken across them); not --nproc-per-node, which splits one step over "
        f"ranks (default: adaptive: {DEFAULT_POLICY.least} first, then as many as the spread "
        f"between them asks for an interval within {DEFAULT_POLICY.target:.0%}%, up to "
        "--max-rounds and within --max-time; with --blocks, the blocks spread over "
        f"{DEFAULT_POLICY.least})",
    )
    timing.add_argument(
        "--max-rounds",
        type=count(1),
        metavar="N",
        help=f"the most processes an adaptive count may reach (default: {DEFAULT_POLICY.most})",
    )
    timing.add_argument(
        "--min-gap",
        type=idle_seconds,
        default=0.0,
        metavar="S",
        help="at least S seconds between the starts of a configuration's successive processes, "
        "so that one run samples the host's slow states too (default: 0); waiting, not timing: "
        "--max-time does not count it",
    )
    timing.add_argument(
        "--timeout",
        type=seconds,
        default=900.0,
        metavar="S",
        help="give up on one process of a configuration S seconds after it is ready (default: "
        "900): loading, building, checking and timing the model count; starting the worker "
        "(interpreter, imports) has its own limit, the longer of 60 s and S",
    )


def add_profile_options(group: argparse._ArgumentGroup, always: bool = False) -> None:
    """--profile (run) and --trace: the profiled steps run after the timed samples."""
    if not always:
        group.add_argument(
            "--profile",
            action="store_true",
            help="after each configuration's timed samples, profile a few steps with "
            "torch.profiler and show where the step's time went (as `accelbench explain`); "
            "no reported figure comes from a profiled step",
        )
    group.add_argument(
        "--trace",
        metavar="FILE.json",
        help="write the profiled steps' Chrome/Perfetto trace to this file (one "
        "configuration" + ("" if always else "; implies --profile") + ")",
    )


def profile_request(args: argparse.Namespace, always: bool = False) -> ProfileRequest | None:
    from ..analysis.explanation import ProfileRequest

    if not (always or args.profile or args.trace):
        return None
    return ProfileRequest(trace=args.trace or "")


def _add_switches(timing: argparse._ArgumentGroup) -> None:
    timing.add_argument(
        "--quick",
        action="store_true",
        help=f"a first look: {QUICK_ROUNDS} processes and {QUICK_SECONDS:g} s of timing in "
        "all per configuration (unless --rounds, --max-rounds, --max-time or --blocks say "
        f"otherwise), {QUICK_STEPS} step an it, no verdict probe, no latency; every result "
        "carries the caveat "
        "\"quick\"",
    )
    timing.add_argument(
        "--resume",
        action="store_true",
        help="go on with the newest stored run of these same options, skipping what it "
        "measured (without it, each run is a run of its own, with its own sweep id)",
    )
    timing.add_argument(
        "--max-batch",
        action="store_true",
        help="find the largest batch that fits for each configuration (double, then bisect; "
        "each probe a warm-up and two timed its in its own process)",
    )
    timing.add_argument(
        "--no-verdict",
        action="store_true",
        help="skip the brief second timing at a quarter of the batch that the bottleneck "
        "verdict needs",
    )
    timing.add_argument(
        "--no-latency",
        action="store_true",
        help="skip timing inference configurations at batch 1 for their per-request latency "
        "(p50, p90, p99; each step timed alone, up to 1,000 steps or 10 s)",
    )


def request_from(args: argparse.Namespace) -> BenchmarkRequest:
    """The BenchmarkRequest the options describe (workflows load only when `run` runs)."""
    from ..workflows.benchmark import BenchmarkRequest
    from ..workloads import WorkloadRef

    # A name given twice is one workload, as a device or a list option given twice is.
    refs = [WorkloadRef(name) for name in dict.fromkeys(args.workloads)]
    if args.model:
        refs.append(WorkloadRef(args.model, model_options(args)))
    elif args.input_shape or args.num_classes or args.vocab_size or args.model_args:
        raise UsageError(
            "--input-shape, --num-classes, --vocab-size and --model-arg describe a --model"
        )
    return from_args(
        BenchmarkRequest,
        args,
        workloads=tuple(refs),
        levers=lever_values(args),
        mode_args=mode_arg_values(args),
        verdict=not args.no_verdict,
        latency=not args.no_latency,
        nodes=args.nnodes,
        profile=profile_request(args),
    )


def handle(args: argparse.Namespace) -> int:
    from ..workflows.benchmark import plan

    # Check every input, the database included, before spending time measuring.
    return run_and_print(plan(request_from(args)), args)


def _left_to_another(spec: RunSpec, holder: str) -> None:
    """A configuration another `run --resume` of this sweep is measuring, said once."""
    from ..levers import label

    host, pid, _ = holder.rsplit(" ", 2)
    print(
        f"accelbench: {spec.workload} on {spec.device} ({label(spec)}) is being measured by "
        f"another run (pid {pid} on {host}): left to it",
        file=sys.stderr,
    )


def _placed(store: Store, results: list[Result]) -> dict[str, Placement]:
    """Where each result landed against its earlier runs; none, said in one line, when the
    store cannot be read (a server away: the results are kept, and the run said where)."""
    from ..analysis.history import placements

    try:
        earlier, complete = stored_history(store, results, HISTORY_SCAN)
    except StoreError as exc:
        print(f"accelbench: warning: no comparison with earlier runs: {exc}", file=sys.stderr)
        return {}
    return placements(results, earlier, complete=complete)


def run_and_print(checked: Plan, args: argparse.Namespace) -> int:
    """Run a checked plan, store it, and print its tables (and explanations) or its JSON."""
    from ..render.console import explanation_blocks, run_tables
    from ..store.db import Store, is_url
    from ..workflows.benchmark import resumable, resumed, run_plan

    resume = getattr(args, "resume", False)
    db = db_path(args)
    # refuse what cannot be resumed, writing nothing
    if resume and (is_url(db) or Path(db).is_file()):
        with Store(db, create=False) as stored:
            checked = resumed(checked, stored)
            resumable(checked, stored)
    with Store(db) as store:
        results = run_plan(
            checked, store, resume=resume, quiet=args.quiet, on_elsewhere=_left_to_another
        )
        history = _placed(store, results)
    sweep = checked.id
    if args.json:
        emit_json(
            {
                "db": str(store.path),
                "sweep": sweep,
                "results": [with_history(result_json(r), r, history) for r in results],
            }
        )
    else:
        print(run_tables(results, width=width(), history=history), end="")
        print(explanation_blocks(results), end="")
        unsaved = "not stored (see above)"
        ids = ", ".join(f"#{r.id}" if r.id is not None else unsaved for r in results)
        ids = ids or "none (all were stored already)"
        print(f"stored as result(s) {ids} in {store.path} (sweep {sweep})")
        print_command_wall(args)
    return exit_code(r.status for r in results)
