"""The `accelbench` command: parse, call the library, print at the edge.

Only argparse and the standard library load at import time, so `accelbench --help` is instant;
each command imports what it needs. An AccelbenchError becomes one line on stderr and exit 2.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from collections.abc import Callable, Sequence
from typing import Any

from ..core.version import __version__
from ..errors import AccelbenchError, UsageError

DEFAULT_WORKLOAD = "seed-cnn"
# Kept here rather than imported so that --help does not import torch; tests check they match.
MODES = ("train", "infer")
PRECISIONS = ("fp32", "tf32", "fp16", "bf16", "int8")
TRAINING_PRECISIONS = PRECISIONS[:4]  # int8 is ONNX Runtime's, for inference
# "onnxruntime" means every execution provider of the device; a provider can be named alone.
ORT_PROVIDERS = ("cpu", "cuda", "tensorrt", "rocm", "migraphx", "coreml", "openvino")
BACKENDS = ("torch", "onnxruntime", *(f"onnxruntime-{p}" for p in ORT_PROVIDERS))
EXPORT_TARGETS = ("onnx", "coreml")
_MOST = 10**9  # no count accelbench takes is larger; SQLite's integers end at 2**63


class _Parser(argparse.ArgumentParser):
    """argparse, with its errors on one line like every other accelbench error."""

    def error(self, message: str) -> Any:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _count(minimum: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be {minimum} or more, got {value}")
        if value > _MOST:
            raise argparse.ArgumentTypeError(f"must be at most {_MOST:,}, got {value:,}")
        return value

    return parse


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0 seconds, got {text}")
    return value


def _percentage(text: str) -> float:
    """'5%' or '0.05' -> 0.05."""
    try:
        return float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a percentage like 5%") from None


def _fraction(text: str) -> float:
    """A share strictly between none and all, e.g. a threshold of 5%."""
    value = _percentage(text)
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"must be between 0% and 100%, got {text}")
    return value


def _share(text: str) -> float:
    """Like _fraction, but 0 and 1 (all must agree) are allowed."""
    value = _percentage(text)
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"must be from 0% to 100%, got {text}")
    return value


def _points(text: str) -> float:
    """'2', '2%' or '0.5' -> percentage points of accuracy."""
    try:
        value = float(text.removesuffix("%"))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a number of percentage points like 2"
        ) from None
    if not 0 <= value <= 100:
        raise argparse.ArgumentTypeError(f"must be between 0 and 100 points, got {text}")
    return value


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number above 0, got {text}")
    return value


def _list_of(parse: Callable[[str], Any]) -> Callable[[str], tuple[Any, ...]]:
    """A comma-separated list, each item parsed by `parse`, duplicates dropped."""

    def parse_list(text: str) -> tuple[Any, ...]:
        items = [item.strip() for item in text.split(",") if item.strip()]
        if not items:
            raise argparse.ArgumentTypeError("empty list")
        return tuple(dict.fromkeys(parse(item) for item in items))

    return parse_list


def _one_of(valid: Sequence[str] | dict[str, Any]) -> Callable[[str], Any]:
    def parse(text: str) -> Any:
        if text not in valid:
            raise argparse.ArgumentTypeError(f"invalid value {text!r}; valid: {', '.join(valid)}")
        return valid[text] if isinstance(valid, dict) else text

    return parse


def _add_output_options(parser: argparse.ArgumentParser, db: bool = True) -> None:
    parser.add_argument("--json", action="store_true", help="machine-readable output on stdout")
    if db:
        parser.add_argument(
            "--db",
            metavar="PATH",
            help="results database (default: $ACCELBENCH_DB or ./accelbench.db)",
        )


def _add_model_arguments(model: Any) -> None:
    """--model and what a bare nn.Module needs, for commands that take one."""
    model.add_argument(
        "--model",
        metavar="REF",
        help="FILE.py:factory or package.module:factory returning a Workload or an nn.Module",
    )
    model.add_argument(
        "--input-shape",
        metavar="SHAPE",
        help="per-sample input shape for an nn.Module, e.g. 3x224x224 or 128",
    )
    model.add_argument(
        "--num-classes",
        type=_count(1),
        metavar="N",
        help="classes of an nn.Module classifier (cross-entropy loss)",
    )
    model.add_argument(
        "--vocab-size", type=_count(1), metavar="N", help="make inputs integer token ids in [0, N)"
    )
    model.add_argument(
        "--loss",
        choices=("cross-entropy", "mse"),
        default="cross-entropy",
        help="loss for an nn.Module (default: cross-entropy)",
    )


def _add_run_arguments(run: argparse.ArgumentParser) -> None:
    from .lever_options import add_lever_options

    run.add_argument(
        "workloads",
        nargs="*",
        metavar="WORKLOAD",
        help=f"workload names (default: {DEFAULT_WORKLOAD}; see `accelbench workloads`)",
    )
    _add_model_arguments(run.add_argument_group("your own model"))
    matrix = run.add_argument_group("configurations (lists multiply)")
    matrix.add_argument(
        "--devices",
        default="all",
        metavar="LIST",
        help="cpu, cuda, cuda:N, mps, xpu, xpu:N, or all (default)",
    )
    matrix.add_argument(
        "--modes",
        type=_list_of(_one_of(MODES)),
        default=("train",),
        metavar="LIST",
        help="train, infer (default: train)",
    )
    matrix.add_argument(
        "--batch-sizes",
        type=_list_of(_count(1)),
        default=(None,),
        metavar="LIST",
        help="batch sizes (default: the workload's)",
    )
    matrix.add_argument(
        "--backends",
        type=_list_of(_one_of(BACKENDS)),
        default=("torch",),
        metavar="LIST",
        help="torch; onnxruntime (inference on the model exported to ONNX, one row per "
        "execution provider of the device), or one provider such as onnxruntime-cpu "
        "(default: torch)",
    )
    parallel = run.add_argument_group("data parallelism (torch.distributed, DDP)")
    groups = {matrix.title or "": matrix, parallel.title or "": parallel}
    add_lever_options(run, groups)
    parallel.add_argument(
        "--nnodes", type=_count(1), default=1, metavar="M", help="nodes taking part (default: 1)"
    )
    parallel.add_argument(
        "--node-rank",
        type=_count(0),
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
    timing = run.add_argument_group("timing")
    timing.add_argument(
        "--epochs",
        type=_count(1),
        metavar="N",
        help="time exactly N its (default: the workload's, 100 for the seed "
        "workloads; otherwise the stop rule of --max-time)",
    )
    timing.add_argument(
        "--max-time",
        type=_seconds,
        metavar="S",
        help="time its until the 95%% CI is within 2%% of the median or S "
        "seconds pass (default for workloads without a fixed count: 20)",
    )
    timing.add_argument(
        "--warmup",
        type=_count(0),
        default=1,
        metavar="N",
        help="warm-up its before timing (default: 1; the --max-time rule runs at least 2, the "
        "last of which sizes its samples)",
    )
    timing.add_argument(
        "--timeout",
        type=_seconds,
        default=900.0,
        metavar="S",
        help="give up on one configuration after S seconds (default: 900)",
    )
    timing.add_argument(
        "--resume",
        action="store_true",
        help="skip configurations of this same sweep already stored",
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
    run.add_argument("--quiet", action="store_true", help="no progress bar")
    _add_output_options(run)


def build_parser() -> argparse.ArgumentParser:
    from ..levers import dimensions

    parser = _Parser(
        prog="accelbench",
        description="How fast your PyTorch model trains and infers on every device you have, "
        "measured honestly: synchronized timing, warm-up excluded, raw samples kept, spread "
        "reported.",
    )
    parser.add_argument("--version", action="version", version=f"accelbench {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = commands.add_parser(
        "run",
        help="benchmark workloads on devices (default: seed-cnn training on all devices)",
        description="Benchmark each configuration (workloads x devices x options) in its own "
        "process and store the results. With no arguments: seed 000's benchmark on every "
        "available device, CPU included.",
    )
    _add_run_arguments(run)
    run.set_defaults(handler=_cmd_run)

    devices = commands.add_parser("devices", help="list every backend: available or not, and why")
    _add_output_options(devices, db=False)
    devices.set_defaults(handler=_cmd_devices)

    workloads = commands.add_parser("workloads", help="list the registered workloads")
    workloads.add_argument("pattern", nargs="?", default="*", help="glob filter (default: *)")
    _add_output_options(workloads, db=False)
    workloads.set_defaults(handler=_cmd_workloads)

    calibrate = commands.add_parser(
        "calibrate",
        help="measure each device's peak matrix rate per precision and its copy bandwidth",
        description="Measure each device's peak FLOP/s per precision (a large matrix product) and "
        "memory bandwidth (a device-to-device copy), and store them: MFU and the bottleneck "
        "verdict prefer these over the published table.",
    )
    calibrate.add_argument(
        "--devices",
        default="all",
        metavar="LIST",
        help="cpu, cuda, cuda:N, mps, xpu, xpu:N, or all (default)",
    )
    _add_output_options(calibrate)
    calibrate.set_defaults(handler=_cmd_calibrate)

    compare = commands.add_parser(
        "compare",
        help="results side by side with bootstrap confidence intervals; or a regression check",
        description="Compare results that differ in one dimension (--by), each against a "
        "baseline, with a bootstrap 95%% CI from the raw samples; or check a candidate run "
        "against a baseline run (--baseline RUN --candidate RUN) and exit 1 on a regression.",
    )
    compare.add_argument(
        "--by",
        default="device",
        choices=tuple(dimensions()),
        help="the dimension to compare (default: device)",
    )
    compare.add_argument(
        "--baseline-value",
        metavar="VALUE",
        help="the baseline among the values (default: cpu, fp32, train, off...)",
    )
    compare.add_argument("--baseline", metavar="RUN", help="a result id or a sweep id")
    compare.add_argument("--candidate", metavar="RUN", help="a result id or a sweep id")
    compare.add_argument(
        "--threshold",
        type=_fraction,
        default=0.05,
        metavar="PCT",
        help="a slowdown past this is a regression (default: 5%%)",
    )
    _add_filters(compare)
    _add_output_options(compare)
    compare.set_defaults(handler=_cmd_compare)

    report = commands.add_parser(
        "report",
        help="a self-contained HTML report with charts, or a Markdown table",
        description="Write the chosen results as one self-contained HTML file (machines, "
        "comparison tables, charts; it loads nothing from the network) or as Markdown.",
    )
    report.add_argument("--out", metavar="FILE", help="where to write (Markdown: default stdout)")
    report.add_argument("--format", choices=("html", "markdown"), default="html")
    report.add_argument("--title", default="accelbench report", help="the HTML page's title")
    _add_filters(report)
    report.add_argument(
        "--db", metavar="PATH", help="results database (default: $ACCELBENCH_DB or ./accelbench.db)"
    )
    report.set_defaults(handler=_cmd_report)

    plot = commands.add_parser("plot", help="one chart of the chosen results' throughput as PNG")
    plot.add_argument("--out", required=True, metavar="FILE.png", help="where to write the PNG")
    _add_filters(plot)
    plot.add_argument(
        "--db", metavar="PATH", help="results database (default: $ACCELBENCH_DB or ./accelbench.db)"
    )
    plot.set_defaults(handler=_cmd_plot)

    export = commands.add_parser(
        "export",
        help="export a workload's model to ONNX (validated) and Core ML (structure checked)",
        description="Export to ONNX through torch.export (legacy exporter as a stated fallback), "
        "validated with ONNX Runtime against PyTorch; convert to Core ML for the Apple Neural "
        "Engine (prediction needs macOS; elsewhere the saved model's structure is checked).",
    )
    export.add_argument("workload", nargs="?", help="a workload name (or use --model)")
    export.add_argument(
        "--to",
        type=_list_of(_one_of(EXPORT_TARGETS)),
        default=("onnx",),
        metavar="LIST",
        help="onnx, coreml (default: onnx)",
    )
    export.add_argument("--out", default=".", metavar="DIR", help="directory (default: .)")
    export.add_argument("--precision", choices=("fp32", "fp16"), default="fp32")
    export.add_argument(
        "--batch",
        type=_count(1),
        default=1,
        metavar="N",
        help="the example batch size (default: 1)",
    )
    export.add_argument(
        "--dynamic-batch", action="store_true", help="let the ONNX model take any batch size"
    )
    export.add_argument(
        "--compute-units",
        default="ALL",
        choices=("ALL", "CPU_AND_NE", "CPU_AND_GPU", "CPU_ONLY"),
        help="Core ML compute units (default: ALL)",
    )
    _add_model_arguments(export.add_argument_group("your own model"))
    export.add_argument("--json", action="store_true", help="machine-readable output on stdout")
    export.set_defaults(handler=_cmd_export_model)
    _add_optimize(commands)

    verify = commands.add_parser(
        "verify",
        help="train on a real data set on each device and precision; flag any that diverge "
        "from CPU fp32",
        description="Train the workload from the same initial weights, on the same batches of "
        "scikit-learn's digits (1,797 8x8 images, resized and replicated to the model's input), "
        "on each device and precision, and compare each run's loss per epoch and held-out "
        "accuracy with the CPU at fp32 (always run first, listed or not). Exit code 0 when every "
        "run is within tolerance; 1 when one diverges (accuracy or final loss beyond tolerance, "
        "or a loss that is not finite), fails, or cannot be judged because the CPU fp32 "
        "baseline learned too little (under 90% held-out accuracy); 2 for bad input.",
    )
    verify.add_argument("workload", nargs="?", help="a workload name (or use --model)")
    _add_model_arguments(verify.add_argument_group("your own model"))
    verify.add_argument(
        "--devices",
        default="all",
        metavar="LIST",
        help="cpu, cuda, cuda:N, mps, xpu, xpu:N, or all available (default); a device not "
        "available here becomes a failed row",
    )
    verify.add_argument(
        "--precisions",
        type=_list_of(_one_of(TRAINING_PRECISIONS)),
        default=("fp32",),
        metavar="LIST",
        help="fp32 (TF32 off), tf32, fp16 (autocast + GradScaler), bf16 (autocast) (default: fp32)",
    )
    verify.add_argument(
        "--epochs",
        type=_count(1),
        default=5,
        metavar="N",
        help="passes over the training images (default: 5)",
    )
    verify.add_argument("--batch-size", type=_count(1), metavar="N", help="default: the workload's")
    verify.add_argument(
        "--lr",
        type=_positive,
        metavar="X",
        help="learning rate for the workload's optimizer (default: the workload's own; "
        "seed-cnn's 0.001 learns too slowly for a few epochs: try 0.01)",
    )
    verify.add_argument(
        "--tolerance",
        type=_points,
        default=2.0,
        metavar="POINTS",
        help="held-out accuracy may differ from CPU fp32's by this many percentage points "
        "(default: 2)",
    )
    verify.add_argument(
        "--loss-tolerance",
        type=_fraction,
        default=0.1,
        metavar="PCT",
        help="the final epoch's loss may differ from CPU fp32's by this fraction of CPU fp32's "
        "first-epoch loss (default: 10%%)",
    )
    verify.add_argument("--quiet", action="store_true", help="no progress bar")
    _add_output_options(verify)
    verify.set_defaults(handler=_cmd_verify)

    results = commands.add_parser(
        "results",
        help="list stored results (newest first), or export and import them",
        description="List stored results, newest first; `results export` and `results import` "
        "move them between machines without loss.",
    )
    results.add_argument("--limit", type=_count(1), metavar="N", help="at most N results")
    _add_filters(results)
    _add_output_options(results)
    results.set_defaults(handler=_cmd_results)
    actions = results.add_subparsers(dest="action", metavar="ACTION")
    # Options an action repeats must not reset what was given before it (`results --db X
    # export`): absent there, they keep the value parsed by `results` itself.
    export = actions.add_parser(
        "export", help="write the chosen results to a JSON file", argument_default=argparse.SUPPRESS
    )
    export.add_argument("--out", required=True, metavar="FILE", help="the file to write")
    _add_filters(export)
    _add_output_options(export)
    export.set_defaults(handler=_cmd_export)
    import_ = actions.add_parser(
        "import",
        help="add the results of export files (idempotent)",
        argument_default=argparse.SUPPRESS,
    )
    import_.add_argument("files", nargs="+", metavar="FILE", help="files from `results export`")
    _add_output_options(import_)
    import_.set_defaults(handler=_cmd_import)
    return parser


def _add_optimize(commands: Any) -> None:
    from ..levers import ladder_groups

    optimize = commands.add_parser(
        "optimize",
        help="try every optimization that applies, measure speedup and drift, recommend one",
        description="The optimization ladder: fp32 eager, each lever alone (tf32, fp16, bf16, "
        "channels_last, torch.compile, CUDA graphs; for inference also int8 through ONNX "
        "Runtime and pruning), and the stacks that make sense, each measured in its own "
        "process with its speedup over fp32 eager (bootstrap 95%% CI) and its drift from the "
        "fp32 model on the same inputs. Recommends the fastest variant within the tolerance. "
        "Exit code 0 when every variant ran or was unsupported, 1 when one failed (OOM, error, "
        "timeout), 2 for bad input.",
    )
    optimize.add_argument("workload", nargs="?", help="a workload name (or use --model)")
    _add_model_arguments(optimize.add_argument_group("your own model"))
    optimize.add_argument(
        "--device", default="", metavar="D", help="one device (default: the best available)"
    )
    optimize.add_argument("--mode", choices=MODES, default="infer", help="default: infer")
    optimize.add_argument(
        "--batch-size", type=_count(1), metavar="N", help="default: the workload's"
    )
    optimize.add_argument(
        "--tolerance",
        type=_positive,
        default=0.05,
        metavar="REL",
        help="largest relative output error allowed, against the largest fp32 output "
        "(default: 0.05)",
    )
    optimize.add_argument(
        "--min-top1",
        type=_share,
        default=0.95,
        metavar="FRACTION",
        help="for classifiers, the share of samples whose top-1 class must agree with fp32's "
        "(default: 0.95, or 95%%)",
    )
    optimize.add_argument(
        "--levers",
        type=_list_of(_one_of(ladder_groups())),
        default=ladder_groups(),
        metavar="LIST",
        help=f"which levers to try: {', '.join(ladder_groups())} (default: all that apply)",
    )
    optimize.add_argument(
        "--epochs", type=_count(1), metavar="N", help="time exactly N its per variant"
    )
    optimize.add_argument(
        "--max-time",
        type=_seconds,
        metavar="S",
        help="otherwise the adaptive rule, up to S timed seconds per variant (default: 10)",
    )
    optimize.add_argument("--warmup", type=_count(0), default=1, metavar="N")
    optimize.add_argument("--timeout", type=_seconds, default=900.0, metavar="S")
    optimize.add_argument("--quiet", action="store_true", help="no progress bar")
    _add_output_options(optimize)
    optimize.set_defaults(handler=_cmd_optimize)


def _cmd_optimize(args: argparse.Namespace) -> int:
    from ..render.console import optimize_table
    from ..store.db import Store
    from ..workflows.optimize import recommend
    from ..workflows.optimize_plan import plan_ladder, run_ladder

    if not args.device:
        from ..devices import pick_device

        args.device = pick_device().name
    ladder = plan_ladder(args)
    with Store(_db_path(args)) as store:
        verdicts = run_ladder(ladder, store, quiet=args.quiet)
    chosen = recommend(verdicts)
    if args.json:
        _emit_json(
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
        print(optimize_table(verdicts, chosen, ladder, width=_width()), end="")
    failed = {"oom", "error", "timeout"}
    return 1 if any(v.result.status in failed for v in verdicts) else 0


def _add_filters(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("filters (each narrows the selection)")
    group.add_argument("--workload", help="only this workload")
    group.add_argument("--device", help="only this device name, e.g. cuda:0")
    group.add_argument("--host", help="only results measured on this host")
    group.add_argument("--mode", choices=MODES, help="only this mode")
    group.add_argument("--precision", choices=PRECISIONS, help="only this precision")
    group.add_argument("--backend", help="only this backend, e.g. torch or onnxruntime-cpu")
    group.add_argument("--sweep", help="only this sweep id")
    group.add_argument("--status", help="only this status (ok, oom, error, timeout, unsupported)")


def _filters(args: argparse.Namespace) -> Any:
    from ..store.db import Filters

    return Filters(
        workload=args.workload,
        device=args.device,
        host=args.host,
        mode=args.mode,
        precision=args.precision,
        backend=args.backend,
        sweep=args.sweep,
        status=args.status,
    )


def main(argv: Sequence[str] | None = None) -> int:
    try:
        # Building the parser loads the lever registry, plugins included: a broken plugin is
        # the user's error, said in one line.
        args = build_parser().parse_args(argv)
        return int(args.handler(args))
    except AccelbenchError as exc:
        print(f"accelbench: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("accelbench: interrupted; results already stored are kept", file=sys.stderr)
        return 130


def _width() -> int:
    # Piped output is read by people later (README, issues): do not wrap it at 80 columns.
    return shutil.get_terminal_size((160, 24)).columns if sys.stdout.isatty() else 160


def _emit_json(payload: Any) -> None:
    print(json.dumps(payload, indent=2))


def _db_path(args: argparse.Namespace) -> Any:
    from pathlib import Path

    from ..store.db import default_db_path

    return Path(args.db) if args.db else default_db_path()


def _cmd_run(args: argparse.Namespace) -> int:
    from ..levers import label
    from ..render.console import run_tables
    from ..store.db import Store
    from ..workflows.benchmark import plan, run_plan

    # Check every input, the database included, before spending time measuring.
    checked = plan(args)
    with Store(_db_path(args)) as store:
        results = run_plan(checked, store, resume=args.resume, quiet=args.quiet)
    sweep = checked.sweep.id
    if args.json:
        _emit_json(
            {
                "db": str(store.path),
                "sweep": sweep,
                "results": [r.to_dict(label=label(r.spec)) for r in results],
            }
        )
    else:
        print(run_tables(results, width=_width()), end="")
        ids = ", ".join(f"#{r.id}" for r in results) or "none (all were stored already)"
        print(f"stored as result(s) {ids} in {store.path} (sweep {sweep})")
    failed = {"oom", "error", "timeout"}
    return 1 if any(r.status in failed for r in results) else 0


def _cmd_verify(args: argparse.Namespace) -> int:
    from ..engine.track import progress_bar
    from ..levers import label
    from ..render.console import verify_table
    from ..store.db import Store
    from ..workflows.benchmark import workload_from
    from ..workflows.verify import FAILED, Settings, prepare, runs_to_verify, verify

    settings = Settings(
        epochs=args.epochs,
        batch_size=args.batch_size,
        lr=args.lr,
        tolerance=args.tolerance,
        loss_tolerance=args.loss_tolerance,
    )
    workload = workload_from(args)
    data = prepare(workload, settings)  # every input checked before the database is opened
    devices = _verify_devices(args.devices)
    total = len(runs_to_verify(devices, args.precisions)) * args.epochs
    with Store(_db_path(args)) as store, progress_bar(disable=args.quiet) as bar:
        task = bar.add_task(f"verify {workload.name}", total=total)
        results = verify(
            workload,
            devices,
            args.precisions,
            settings,
            data,
            on_result=store.save,
            on_epoch=lambda device, precision, epoch: bar.advance(task),
        )
    sweep = results[0].sweep
    if args.json:
        _emit_json(
            {
                "db": str(store.path),
                "sweep": sweep,
                "results": [r.to_dict(label=label(r.spec)) for r in results],
            }
        )
    else:
        notes = (
            []
            if any(d.is_host for d in devices)
            else ["cpu was not listed: it ran anyway, at fp32, as the baseline"]
        )
        print(verify_table(results, notes, width=_width()), end="")
        ids = ", ".join(f"#{r.id}" for r in results)
        print(f"stored as result(s) {ids} in {store.path} (verify run {sweep})")
    bad = {"diverges", "inconclusive"}
    failed = [
        r for r in results if r.status in FAILED or (r.verification or {}).get("verdict") in bad
    ]
    return 1 if failed else 0


def _verify_devices(text: str) -> list[Any]:
    """'all' is every available device; named ones are kept even when not available here,
    so that they become failed rows. An unknown name is bad input."""
    from ..devices import find_device, resolve_devices

    names = [n.strip() for n in text.split(",") if n.strip()]
    if names == ["all"]:
        return resolve_devices("all")
    devices: list[Any] = []
    for name in names:
        device = find_device(name)
        if device not in devices:
            devices.append(device)
    if not devices:
        raise UsageError("--devices names no device; try cpu, cuda or all")
    return devices


def _cmd_calibrate(args: argparse.Namespace) -> int:
    import platform

    from ..devices import resolve_devices
    from ..devices.peaks import calibrate, known_peaks
    from ..render.console import calibration_table
    from ..store.db import Store

    devices = resolve_devices(args.devices)
    with Store(_db_path(args)) as store:
        rows = []
        for device in devices:
            measured = calibrate(device)
            store.save_calibration(device.name, device.model, platform.node(), measured)
            rows.append((device, measured, known_peaks(device.model)))
    if args.json:
        _emit_json(
            [
                {
                    "device": d.name,
                    "model": d.model,
                    "flops": dict(m.flops),
                    "bandwidth": m.bandwidth,
                    "source": m.source,
                    "published": None
                    if p is None
                    else {"flops": dict(p.flops), "bandwidth": p.bandwidth, "source": p.source},
                }
                for d, m, p in rows
            ]
        )
    else:
        print(calibration_table(rows, width=_width()), end="")
    return 0


def _cmd_devices(args: argparse.Namespace) -> int:
    from ..devices import discover
    from ..render.console import devices_table

    devices = discover()
    if args.json:
        _emit_json([d.to_dict() for d in devices])
    else:
        print(devices_table(devices, width=_width()), end="")
    return 0


def _cmd_workloads(args: argparse.Namespace) -> int:
    from ..render.console import workloads_table
    from ..workloads import list_workloads

    workloads = list_workloads(args.pattern)
    if args.json:
        _emit_json([w.describe() for w in workloads])
    else:
        print(workloads_table(workloads, width=_width()), end="")
    return 0


def _cmd_results(args: argparse.Namespace) -> int:
    from ..levers import label
    from ..render.console import results_table
    from ..store.db import Store

    with Store(_db_path(args), create=False) as store:
        results = store.results(_filters(args), limit=args.limit)
    if args.json:
        _emit_json([r.to_dict(label=label(r.spec)) for r in results])
    else:
        print(results_table(results, width=_width()), end="")
    return 0


def _cmd_compare(args: argparse.Namespace) -> int:
    from ..analysis.compare import compare, compare_runs
    from ..levers import label
    from ..render.console import changes_table, compare_table
    from ..store.db import Store

    if bool(args.baseline) != bool(args.candidate):
        raise UsageError("--baseline and --candidate go together: give both RUNs")
    with Store(_db_path(args), create=False) as store:
        if args.baseline:
            base, cand = (_run(store, ref) for ref in (args.baseline, args.candidate))
            changes = compare_runs(base, cand, args.threshold)
            if args.json:
                _emit_json(
                    [
                        {
                            "spec": c.baseline.spec.to_dict(),
                            "speedup": c.speedup.to_dict() if c.speedup else None,
                            "candidate_status": c.candidate.status,
                            "regression": c.regression,
                        }
                        for c in changes
                    ]
                )
            else:
                print(changes_table(changes, args.threshold, width=_width()), end="")
            return 1 if any(c.regression for c in changes) else 0
        from ..levers import dimensions

        by = dimensions()[args.by]
        comparison = compare(store.results(_filters(args)), by, args.baseline_value)
    if args.json:
        _emit_json(
            [
                {
                    "value": row.value,
                    "result": row.result.to_dict(label=label(row.result.spec)),
                    "speedup": row.speedup.to_dict() if row.speedup else None,
                }
                for row in comparison.rows
            ]
        )
    else:
        print(compare_table(comparison, width=_width()), end="")
    return 0


def _run(store: Any, ref: str) -> Any:
    """The results of a RUN: a result id, or a sweep id."""
    from ..store.db import Filters

    # Sweep ids are 12 hex digits; a result id is a shorter number.
    filters = Filters(id=int(ref)) if ref.isdigit() and len(ref) < 12 else Filters(sweep=ref)
    results = store.results(filters)
    if not results:
        raise UsageError(f"no stored result or sweep {ref!r}; see `accelbench results`")
    return results


def _chosen(args: argparse.Namespace) -> Any:
    from ..store.db import Store

    with Store(_db_path(args), create=False) as store:
        return store.results(_filters(args))


def _write(path: str, data: str | bytes) -> None:
    from pathlib import Path

    try:
        if isinstance(data, bytes):
            Path(path).write_bytes(data)
        else:
            Path(path).write_text(data)
    except OSError as exc:
        raise UsageError(f"cannot write {path}: {exc.strerror}") from None


def _cmd_report(args: argparse.Namespace) -> int:
    from ..render import html_report, markdown_report

    results = _chosen(args)
    if args.format == "markdown":
        text = markdown_report(results)
        if not args.out:
            print(text, end="")
            return 0
    else:
        if not args.out:
            raise UsageError("an HTML report needs --out FILE.html")
        text = html_report(results, title=args.title)
    _write(args.out, text)
    print(
        f"wrote {args.out}: {len(results)} result(s)"
        if results
        else f"wrote {args.out}: no results match the filters, so it is empty"
    )
    return 0


def _cmd_plot(args: argparse.Namespace) -> int:
    from ..render import throughput_chart

    results = _chosen(args)
    png = throughput_chart(results)
    if png is None:
        raise UsageError("no measured results match the filters: nothing to plot")
    _write(args.out, png)
    print(f"wrote {args.out}")
    return 0


def _cmd_export_model(args: argparse.Namespace) -> int:
    from functools import partial
    from pathlib import Path

    from ..exporters import export_model
    from ..exporters.coreml import export_coreml
    from ..exporters.onnx import export_onnx
    from ..render.console import export_table
    from ..workflows.benchmark import workload_from

    workload = workload_from(args)
    if args.dynamic_batch and args.batch < 2:
        args.batch = 2  # torch.export specializes a dimension of size 1: trace with 2
    exporters: dict[str, Any] = {
        "onnx": export_onnx,
        "coreml": partial(export_coreml, compute_units=args.compute_units),
    }
    reports = export_model(
        workload,
        list(args.to),
        Path(args.out),
        exporters,
        precision=args.precision,
        batch=args.batch,
        dynamic_batch=args.dynamic_batch,
    )
    if args.json:
        _emit_json([r.to_dict() for r in reports])
    else:
        print(export_table(reports, width=_width()), end="")
    failed = [r for r in reports if r.validation.get("ok") is False]
    return 1 if failed else 0


def _cmd_export(args: argparse.Namespace) -> int:
    from pathlib import Path

    from ..store.db import Store
    from ..store.results_file import write_export

    filters = _filters(args)
    with Store(_db_path(args), create=False) as store:
        results = store.results(filters)[::-1]  # oldest first
    write_export(results, Path(args.out))
    if args.json:
        _emit_json({"exported": len(results), "out": args.out})
    else:
        print(f"exported {len(results)} result(s) to {args.out} (filters: {filters.describe()})")
    return 0


def _cmd_import(args: argparse.Namespace) -> int:
    from pathlib import Path

    from ..levers import check_levers
    from ..store.db import Store
    from ..store.results_file import read_export

    # Read and check every file before the database is touched.
    batches = [(path, read_export(Path(path), check_levers)) for path in args.files]
    with Store(_db_path(args)) as store:
        added = [(path, len(results), store.import_results(results)) for path, results in batches]
    if args.json:
        _emit_json([{"file": p, "results": n, "added": a} for p, n, a in added])
    else:
        for path, count, new in added:
            print(f"{path}: {count} result(s), {new} new, {count - new} already stored")
    return 0


if __name__ == "__main__":
    sys.exit(main())
